/**
 * Every MCP tool converts to an OpenAI strict-mode function tool in the OpenAI Agents SDK (`@openai/agents`,
 * `mcpToFunctionTool` with `convertSchemasToStrict`, what `MCPServerStreamableHttp` + `Agent` do): a free-form object
 * parameter is listed as JSON text, which the SDK's strict conversion takes, and the MCP endpoint reads back. Before
 * issue 39, 5 of 127 tools (and execute_tool) fell back to non-strict with a warning.
 */
import { describe, expect, it } from 'vitest';
import { mcpToFunctionTool } from '@openai/agents';
import { tools } from '../../generated/registry.ts';
import { EXECUTE_TOOL, listedTool, SEARCH_TOOLS } from '../../runtime/mcp/endpoint.ts';
import { inputFromModel } from '../../runtime/tools/llm-formats.ts';
import { validateToolInput } from '../../runtime/tools/validation.ts';

type Node = Record<string, unknown>;
const all = [...tools.values()];

/** A value as a model following the MCP schema writes it: each free-form object as its JSON text. */
function asMcpModel(schema: Node, listed: Node, value: unknown): unknown {
  if (listed.type === 'string' && schema.type === 'object') return JSON.stringify(value);
  if (schema.type === 'array' && Array.isArray(value))
    return value.map((v) => asMcpModel(schema.items as Node, listed.items as Node, v));
  if (schema.type === 'object' && value && typeof value === 'object' && schema.properties) {
    const out: Node = {};
    const props = schema.properties as Record<string, Node>;
    const listedProps = listed.properties as Record<string, Node>;
    for (const [k, v] of Object.entries(value)) out[k] = props[k] ? asMcpModel(props[k], listedProps[k]!, v) : v;
    return out;
  }
  return value;
}

describe('MCP tools in the OpenAI Agents SDK with convertSchemasToStrict', () => {
  const server = { name: 'agent-connector-service' } as Parameters<typeof mcpToFunctionTool>[1];

  it.each(all.map((t) => [t.name, t] as const))('%s converts to a strict function tool', (_n, tool) => {
    const listed = listedTool(tool, 'https://acs.example.com');
    const fn = mcpToFunctionTool(listed as Parameters<typeof mcpToFunctionTool>[0], server, true);
    expect(fn.strict, `${tool.name} fell back to non-strict`).toBe(true);
  });

  it('converts search_tools and execute_tool too', () => {
    for (const t of [SEARCH_TOOLS, EXECUTE_TOOL]) {
      expect(mcpToFunctionTool(t as Parameters<typeof mcpToFunctionTool>[0], server, true).strict, t.name).toBe(true);
    }
  });

  it('counts: every one of the tools, none non-strict', () => {
    const nonStrict = all.filter(
      (t) =>
        !mcpToFunctionTool(
          listedTool(t, 'https://acs.example.com') as Parameters<typeof mcpToFunctionTool>[0],
          server,
          true,
        ).strict,
    );
    expect(all.length).toBeGreaterThanOrEqual(127);
    expect(nonStrict.map((t) => t.name)).toEqual([]);
  });

  it.each(all.map((t) => [t.name, t] as const))(
    '%s: every example, as JSON text where listed so, reads back',
    (_n, tool) => {
      const listed = listedTool(tool, 'https://acs.example.com').inputSchema as Node;
      for (const example of tool.examples) {
        const sent = asMcpModel(tool.inputSchema, listed, structuredClone(example.input));
        const back = inputFromModel(tool, 'mcp', sent);
        expect(back.errors).toEqual([]);
        expect(back.input).toEqual(example.input);
        expect(validateToolInput(tool, structuredClone(back.input))).toEqual([]);
        // An object sent where JSON text is listed is taken as it is.
        expect(inputFromModel(tool, 'mcp', structuredClone(example.input)).input).toEqual(example.input);
      }
    },
  );

  it('names JSON text that is not an object', () => {
    const t = tools.get('crm_contact_update')!;
    const back = inputFromModel(t, 'mcp', { contact_id: '101', props: '{"firstname":' });
    expect(back.errors).toEqual([
      { field: 'props', message: 'must be a JSON object, written as text in this tool format' },
    ]);
    const listed = listedTool(t, 'https://acs.example.com').inputSchema as { properties: Record<string, Node> };
    expect(listed.properties.props).toEqual({
      type: 'string',
      description: expect.stringContaining('A JSON object, written as text.'),
    });
  });
});
