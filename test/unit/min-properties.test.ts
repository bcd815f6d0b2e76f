/** `minProperties` on object parameters: an object that must hold something (an update with a change). */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { generate } from '../../generator/main.ts';
import { toolInputSchema } from '../../generator/schema.ts';
import type { ConnectorSpec, ToolSpec } from '../../core/spec-model.ts';
import { validateToolInput } from '../../runtime/tools/validation.ts';
import type { ToolDefinition } from '../../core/tool-types.ts';

const header = `name: demo
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
`;

function toolWith(props: ToolSpec['input']['x']): ToolDefinition {
  const tool: ToolSpec = {
    name: 'demo_update',
    title: 'Update a demo item',
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    output: { shape: {} },
    description: 'Update',
    input: { x: props },
    examples: [],
  };
  const { schema, messages } = toolInputSchema({ name: 'demo', tools: [tool] } as unknown as ConnectorSpec, tool);
  const validate = new Ajv({ allErrors: true, useDefaults: true, strict: true, strictTypes: false }).compile(schema);
  return {
    name: tool.name,
    inputSchema: schema,
    validate,
    messages,
    checkRules: () => [],
  } as unknown as ToolDefinition;
}

describe('minProperties', () => {
  it('puts the keyword into the input schema and refuses an empty object naming the field', () => {
    const tool = toolWith({ type: 'object', minProperties: 1 });
    expect((tool.inputSchema.properties as Record<string, unknown>).x).toMatchObject({
      type: 'object',
      minProperties: 1,
    });
    expect(validateToolInput(tool, { x: {} })).toEqual([{ field: 'x', message: 'must not be empty' }]);
    expect(validateToolInput(tool, { x: { a: 1 } })).toEqual([]);
    expect(validateToolInput(tool, {})).toEqual([]);
  });

  it('counts properties when more than one is needed', () => {
    const tool = toolWith({ type: 'object', minProperties: 2 });
    expect(validateToolInput(tool, { x: { a: 1 } })).toEqual([
      { field: 'x', message: 'must have at least 2 properties' },
    ]);
    expect(validateToolInput(tool, { x: { a: 1, b: 2 } })).toEqual([]);
  });

  it('is a spec error on a parameter that is not an object', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'acs-gen-'));
    writeFileSync(
      join(dir, 'demo.yaml'),
      header +
        `  - name: demo_get
    title: Test tool get
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
    output: { shape: {} }
    description: Get
    input:
      q: { type: string, minProperties: 1 }
    request: { method: GET, path: /items, query: { q: "{q}" } }
    examples: [{ input: { q: "1" }, requests: [{ method: GET, url: "https://api.demo.example/items?q=1" }] }]
`,
    );
    await expect(generate(dir)).rejects.toThrow(
      'tool demo_get, field input.q.minProperties: minProperties applies to object parameters',
    );
  });
});
