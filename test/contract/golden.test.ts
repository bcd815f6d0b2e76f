/**
 * One golden test per tool: every example in the tool's YAML, validated with the generated validator
 * (defaults applied), produces exactly the upstream request(s) the example states.
 */
import { describe, expect, it } from 'vitest';
import { connectors, tools } from '../../generated/registry.ts';
import { validateToolInput } from '../../runtime/tools/validation.ts';
import { planRequests } from '../../runtime/tools/plan.ts';

describe.each([...connectors.values()].map((c) => [c.name, c] as const))('%s', (_name, connector) => {
  const auth = connector.auth[0]!;
  const target = {
    connector,
    connection: { apiBaseUrl: null, apiHosts: {}, authKind: auth.kind },
    fields: { ...connector.exampleFields },
    auth,
  };
  it.each(connector.toolNames.map((n) => [n]))('%s', (toolName) => {
    const tool = tools.get(toolName)!;
    expect(tool.examples.length).toBeGreaterThan(0);
    for (const example of tool.examples) {
      const input = structuredClone(example.input);
      expect(validateToolInput(tool, input), `example input of ${toolName} must be valid`).toEqual([]);
      const planned = planRequests(tool, input, target);
      expect(planned.map((p) => `${p.method} ${p.url}`)).toEqual(example.requests.map((r) => `${r.method} ${r.url}`));
      example.requests.forEach((want, i) => {
        const got = planned[i]!;
        expect(got.body, `body of request ${i} of ${toolName}`).toEqual(want.body);
        for (const [k, v] of Object.entries(want.headers ?? {}))
          expect(got.headers[k.toLowerCase()], `header ${k}`).toBe(v);
      });
    }
  });
});

describe('registry', () => {
  it('every tool belongs to its connector and has a schema that refuses unknown parameters', () => {
    for (const t of tools.values()) {
      expect(connectors.get(t.connector)!.toolNames).toContain(t.name);
      expect(t.name.startsWith(`${t.connector}_`)).toBe(true);
      expect(t.inputSchema.additionalProperties).toBe(false);
    }
  });
});
