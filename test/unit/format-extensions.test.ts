/**
 * Format additions made for the call-intelligence connector: a base URL that is an account field holding a
 * whole URL, the `unsupported` rule, a hook tool that sends nothing, and `$each` building plain objects.
 */
import { describe, expect, it } from 'vitest';
import { generate } from '../../generator/main.ts';
import { generatorError, specDir } from '../helpers/specs.ts';

/** A connector named `callintel`, so that hooks resolve against specs/hooks/callintel.ts. */
const header = (baseUrl = '"{api_base_url}"') => `name: callintel
title: Demo
description: Demo connector
provider: Demo API
auth:
  - kind: api_key
    fields:
      - { name: api_base_url, title: Base, format: url, host_allowlist: ["*.demo.example"], default: "https://api.demo.example" }
      - { name: api_key, title: Key, secret: true }
    apply: { headers: { X-API-Key: "{api_key}" } }
api:
  base_url: ${baseUrl}
example_fields: { api_base_url: "https://eu.demo.example" }
tools:
`;

const errorsOf = (yaml: string) => generatorError(yaml, 'callintel');

const tool = `  - name: callintel_get
    title: Test tool get
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
    output: { shape: {} }
    description: Get
    input:
      id: { type: string, required: true }
      note: { type: string }
    rules:
      - unsupported: [note]
        message: "has no field upstream"
    request: { method: GET, path: "/items/{id}" }
    examples: [{ input: { id: "1" }, requests: [{ method: GET, url: "https://eu.demo.example/items/1" }] }]
`;

describe('format additions', () => {
  it('a base URL may be an account field holding a whole URL; anything else must still be https', async () => {
    const out = await generate(specDir(header() + tool, 'callintel'));
    expect(out.files.get('generated/connectors/callintel.ts')).toContain("base_url: '{api_base_url}'");
    expect(await errorsOf(header('http://api.demo.example') + tool)).toMatch(/api\.base_url: must match pattern/);
  });

  it('`unsupported` refuses a given parameter with a 400 naming it, and counts as its use', async () => {
    const out = await generate(specDir(header() + tool, 'callintel'));
    const code = out.files.get('generated/connectors/callintel.ts')!;
    const rules = code.match(/function rules_callintel_get[\s\S]*?\n}\n/)![0];
    expect(rules).toContain("for (const f of ['note'])");
    expect(rules).toContain("message: 'has no field upstream'");
    expect(out.files.get('generated/docs/callintel.md')).toContain('`note` refused (400): has no field upstream');
  });

  it('refuses `unsupported` on a required parameter, or on one the request sends; an unused one must be refused or mapped', async () => {
    const required = tool.replace('note: { type: string }', 'note: { type: string, required: true }');
    expect(await errorsOf(header() + required)).toContain(
      'field input.note: is required, so an `unsupported` rule would refuse every call',
    );
    const sent = tool.replace('path: "/items/{id}" }', 'path: "/items/{id}", query: { note: "{note}" } }');
    expect(await errorsOf(header() + sent)).toContain(
      'field input.note: is refused by an `unsupported` rule, so the request may not use it',
    );
    const unused = tool.replace(/ {4}rules:\n.*\n.*\n/, '');
    expect(await errorsOf(header() + unused)).toContain(
      'field input.note: is never used by the request; map it, refuse it with an `unsupported` rule, or name a hook that uses it',
    );
  });

  it('only a hook tool may send nothing', async () => {
    const hookOnly = `  - name: callintel_refuse
    title: Test tool refuse
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
    output: { shape: {} }
    description: Refuses
    input:
      flow_instance_id: { type: string, required: true }
    hook: flowContentOverrideUnavailable
    examples: [{ input: { flow_instance_id: "1" }, requests: [] }]
`;
    const out = await generate(specDir(header() + hookOnly, 'callintel'));
    expect(out.files.get('generated/connectors/callintel.ts')).toMatch(
      /function build_callintel_refuse\([^)]*\): UpstreamRequest\[\] \{\s*const out: UpstreamRequest\[\] = \[\];\s*return out;/,
    );
    const declarative = hookOnly.replace('    hook: flowContentOverrideUnavailable\n', '');
    const msg = await errorsOf(header() + declarative);
    expect(msg).toContain('field request: is required (only a tool with a hook may send nothing)');
    const emptyExample = tool.replace(
      'requests: [{ method: GET, url: "https://eu.demo.example/items/1" }]',
      'requests: []',
    );
    expect(await errorsOf(header() + emptyExample)).toContain(
      'field examples[0].requests: must list at least one request',
    );
  });

  it('$each may build a plain object from each item', async () => {
    const each = `  - name: callintel_bulk
    title: Test tool bulk
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
    output: { shape: {} }
    description: Bulk
    input:
      ids: { type: array, required: true, items: { type: string } }
    request:
      method: POST
      path: /bulk
      body: { prospects: { $in: ids, $each: { crmId: { $item: true } } } }
    examples: [{ input: { ids: [a, b] }, requests: [{ method: POST, url: "https://eu.demo.example/bulk", body: { prospects: [{ crmId: a }, { crmId: b }] } }] }]
`;
    const out = await generate(specDir(header() + each, 'callintel'));
    const code = out.files.get('generated/connectors/callintel.ts')!;
    expect(code).toMatch(/H\.each\(input\['ids'\], \(item0: any\) => \(\{ crmId: item0 \}\)\)/);
  });
});
