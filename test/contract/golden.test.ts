/**
 * One golden test per tool: every example in the tool's YAML, validated with the generated validator
 * (defaults applied), produces exactly the upstream request(s) the example states, with exactly the headers
 * the connector docs show for it (the example's own, plus the connector's, user agent, content type and
 * redacted credentials).
 */
import { describe, expect, it } from 'vitest';
import { connectors, tools } from '../../generated/registry.ts';
import { validateToolInput } from '../../runtime/tools/validation.ts';
import { planRequests } from '../../runtime/tools/plan.ts';
import { loadSpecFile } from '../../generator/load.ts';
import { exampleRequestHeaders } from '../../generator/emit-docs.ts';
import { assertSameRequests } from './golden-compare.ts';

describe.each([...connectors.values()].map((c) => [c.name, c] as const))('%s', (name, connector) => {
  const spec = loadSpecFile(`specs/${name}.yaml`).spec;
  const auth = connector.auth[0]!;
  const target = {
    connector,
    connection: { apiBaseUrl: null, apiHosts: {}, authKind: auth.kind },
    fields: { ...connector.exampleFields },
    auth,
  };
  it.each(connector.toolNames.map((n) => [n]))('%s', (toolName) => {
    const tool = tools.get(toolName)!;
    const toolSpec = spec.tools.find((t) => t.name === toolName)!;
    expect(tool.examples.length).toBeGreaterThan(0);
    tool.examples.forEach((example, i) => {
      const label = `${toolName}, example ${i + 1}${example.title ? ` (${example.title})` : ''}`;
      const input = structuredClone(example.input);
      expect(validateToolInput(tool, input), `${label}: the input must be valid`).toEqual([]);
      const expected = example.requests.map((r) => ({ ...r, headers: exampleRequestHeaders(spec, toolSpec, r) }));
      assertSameRequests(label, planRequests(tool, input, target), expected);
    });
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
