/**
 * A tool's MCP annotations default from its requests' HTTP methods where the method settles them
 * (generator/annotations.ts); a flag the method does not settle must be declared, and the generator names it.
 */
import { describe, expect, it } from 'vitest';
import { generate } from '../../generator/main.ts';
import { generatorError, specDir } from '../helpers/specs.ts';

const spec = (tools: string) => `name: demo
title: Demo
description: Demo connector
provider: Demo API
auth:
  - kind: api_key
    fields: [{ name: api_key, title: Key, secret: true }]
    apply: { headers: { X-API-Key: "{api_key}" } }
api:
  base_url: https://api.demo.example
tools:
${tools}`;

const tool = (name: string, method: string, annotations: string) => `  - name: demo_${name}
    title: Tool ${name} of the demo
    annotations: ${annotations}
    output: { shape: {} }
    description: ${name}
    input: {}
    request: { method: ${method}, path: /items }
    examples: [{ input: {}, requests: [{ method: ${method}, url: "https://api.demo.example/items" }] }]
`;

async function annotationsOf(tools: string) {
  const out = await generate(specDir(spec(tools), 'demo'));
  return Object.fromEntries(out.connectors[0]!.tools.map((t) => [t.name, t.annotations]));
}

describe('annotation defaults', () => {
  it('default from the method: GET reads, DELETE destroys, PUT and DELETE are idempotent', async () => {
    const got = await annotationsOf(
      tool('read', 'GET', '{ openWorldHint: false }') +
        tool('remove', 'DELETE', '{ openWorldHint: false }') +
        tool('replace', 'PUT', '{ openWorldHint: true, destructiveHint: true }') +
        tool('add', 'POST', '{ openWorldHint: false, destructiveHint: false, idempotentHint: false }'),
    );
    expect(got).toEqual({
      demo_read: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      demo_remove: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      demo_replace: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
      demo_add: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    });
  });

  it('keep what the YAML declares (a POST that only searches is read-only)', async () => {
    const got = await annotationsOf(
      tool(
        'search',
        'POST',
        '{ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }',
      ),
    );
    expect(got.demo_search).toEqual({
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    });
  });

  it('name each flag the method does not settle', async () => {
    const msg = await generatorError(
      spec(
        tool('add', 'POST', '{ openWorldHint: false }') +
          tool('patch', 'PATCH', '{ openWorldHint: false, destructiveHint: true }'),
      ),
      'demo',
    );
    expect(msg).toMatch(
      /tool demo_add, field annotations\.destructiveHint: is required \(true when it may delete or overwrite what exists, false when it only adds\): the tool sends POST, which does not tell it/,
    );
    expect(msg).toMatch(/tool demo_add, field annotations\.idempotentHint: is required .*the tool sends POST/);
    expect(msg).toMatch(/tool demo_patch, field annotations\.idempotentHint: is required .*the tool sends PATCH/);
    expect(msg).not.toMatch(/demo_patch, field annotations\.destructiveHint/);
  });

  it('require openWorldHint always', async () => {
    const msg = await generatorError(spec(tool('read', 'GET', '{ readOnlyHint: true }')), 'demo');
    expect(msg).toMatch(/tool demo_read, field annotations\.openWorldHint: is required/);
  });
});
