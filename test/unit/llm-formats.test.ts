/**
 * Every tool in every LLM vendor's format: the definition meets the vendor's documented rules (checked by the
 * independent checkers in test/helpers/llm-vendor-rules.ts), no constraint of the tool's schema is lost (kept
 * as a keyword or written into the description), and each tool's examples survive the trip a model's
 * arguments take: vendor shape → inputFromModel → the tool's own validator, equal to the original input.
 */
import { agentDescription } from '../../core/agent-description.ts';
import { isDeepStrictEqual } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { connectors, toolCount, tools } from '../../generated/registry.ts';
import type { ToolDefinition } from '../../core/tool-types.ts';
import {
  anthropicTool,
  geminiFunctionDeclaration,
  inputFromModel,
  llmTool,
  mcpTool,
  openaiTool,
  type LlmFormat,
} from '../../runtime/tools/llm-formats.ts';
import { validateToolInput } from '../../runtime/tools/validation.ts';
import { merge } from '../../core/template-runtime.ts';
import {
  anthropicToolViolations,
  geminiAsJsonSchema,
  geminiDeclarationViolations,
  mcpToolViolations,
  openaiToolViolations,
} from '../helpers/llm-vendor-rules.ts';
import { asText } from '../helpers/text.ts';

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => v !== null && typeof v === 'object' && !Array.isArray(v);
const all = [...tools.values()];
const byName = (t: ToolDefinition) => t.name;

describe('the registry', () => {
  it(`has all ${toolCount} tools to convert`, () => {
    expect(all).toHaveLength(toolCount);
    expect(toolCount).toBe([...connectors.values()].reduce((n, c) => n + c.toolNames.length, 0));
  });
});

describe('vendor rules, every tool', () => {
  it.each(all.map((t) => [t.name, t]))('%s: OpenAI Chat Completions, plain and strict', (_n, tool) => {
    expect(openaiToolViolations(openaiTool(tool), 'chat', false)).toEqual([]);
    expect(openaiToolViolations(openaiTool(tool, { strict: true }), 'chat', true)).toEqual([]);
  });
  it.each(all.map((t) => [t.name, t]))('%s: OpenAI Responses API, plain and strict', (_n, tool) => {
    expect(openaiToolViolations(openaiTool(tool, { api: 'responses' }), 'responses', false)).toEqual([]);
    expect(openaiToolViolations(openaiTool(tool, { api: 'responses', strict: true }), 'responses', true)).toEqual([]);
  });
  it.each(all.map((t) => [t.name, t]))('%s: Anthropic', (_n, tool) => {
    expect(anthropicToolViolations(anthropicTool(tool))).toEqual([]);
  });
  it.each(all.map((t) => [t.name, t]))('%s: Gemini', (_n, tool) => {
    expect(geminiDeclarationViolations(geminiFunctionDeclaration(tool))).toEqual([]);
  });
  it.each(all.map((t) => [t.name, t]))('%s: MCP', (_n, tool) => {
    expect(mcpToolViolations(mcpTool(tool))).toEqual([]);
  });
});

/** The schema an `anyOf: [X, {"type": "null"}]` makes nullable, with the outer description. */
function unwrapNullable(node: Node): { node: Node; nullable: boolean } {
  if (Array.isArray(node.anyOf)) {
    const branches = node.anyOf as Node[];
    const inner = branches.find((b) => b.type !== 'null')!;
    return {
      node: { ...inner, description: node.description ?? inner.description },
      nullable: branches.some((b) => b.type === 'null'),
    };
  }
  const types = Array.isArray(node.type) ? (node.type as string[]) : [node.type];
  return { node, nullable: types.includes('null') || node.nullable === true };
}
const typeOf = (node: Node) =>
  String(
    asText((Array.isArray(node.type) ? (node.type as string[]).find((t) => t !== 'null') : node.type) ?? ''),
  ).toLowerCase();
const ANNOTATIONS = new Set([
  '$id',
  'title',
  'description',
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'writeOnly',
  'readOnly',
  'examples',
]);
const shown = (v: unknown): string[] =>
  typeof v === 'string'
    ? [v]
    : Array.isArray(v)
      ? v.map((e) => (typeof e === 'string' ? e : JSON.stringify(e)))
      : [JSON.stringify(v)];

/**
 * What the vendor's schema lost of the tool's: a type, a description, a property, a required flag, or a
 * constraint that is neither kept as a keyword (or its exact equivalent) nor shown in the description.
 */
function lostInformation(orig: Node, vendor: Node, path: string, dialect: 'strict' | 'gemini'): string[] {
  const out: string[] = [];
  const { node } = unwrapNullable(vendor);
  const text = asText(node.description ?? '');
  if (typeof orig.description === 'string' && path !== '' && !text.includes(orig.description.trim()))
    out.push(`${path}: description dropped`);
  const freeForm = orig.type === 'object' && orig.properties === undefined;
  const type = typeOf(node);
  if (freeForm) {
    if (type !== 'string' || !text.includes('JSON')) out.push(`${path}: a free-form object must become JSON text`);
  } else if (type !== orig.type && !(orig.type === 'number' && orig.multipleOf === 1 && type === 'integer')) {
    out.push(`${path}: type ${String(orig.type)} became ${type}`);
  }
  for (const [k, v] of Object.entries(orig)) {
    if (ANNOTATIONS.has(k)) continue;
    const kept = Array.isArray(node[k])
      ? isDeepStrictEqual(
          (node[k] as unknown[]).filter((e) => e !== null),
          v,
        )
      : isDeepStrictEqual(node[k], v);
    const equivalent = k === 'multipleOf' && v === 1 && type === 'integer';
    const described = shown(v).every((s) => text.includes(s));
    if (!kept && !equivalent && !described) out.push(`${path}: ${k} ${JSON.stringify(v)} lost`);
  }
  if (freeForm) return out;
  if (orig.type === 'object') {
    const origProps = Object.entries((orig.properties as Record<string, Node>) ?? {});
    const vendorProps = Object.entries((node.properties as Record<string, Node>) ?? {});
    if (origProps.length !== vendorProps.length)
      out.push(`${path}: ${origProps.length} properties became ${vendorProps.length}`);
    const origRequired = new Set((orig.required as string[] | undefined) ?? []);
    const vendorRequired = new Set((node.required as string[] | undefined) ?? []);
    origProps.forEach(([name, p], i) => {
      // Gemini may rename a parameter; the converter keeps the order, so the i-th is the same parameter
      const [vendorName, vp] = dialect === 'gemini' ? vendorProps[i]! : [name, (node.properties as Node)[name] as Node];
      const at = path ? `${path}.${name}` : name;
      if (!vp) return void out.push(`${at}: missing`);
      if (origRequired.has(name) && !vendorRequired.has(vendorName)) out.push(`${at}: no longer required`);
      if (dialect === 'strict' && unwrapNullable(vp).nullable === origRequired.has(name))
        out.push(`${at}: ${origRequired.has(name) ? 'required but nullable' : 'optional but not nullable'}`);
      out.push(...lostInformation(p, vp, at, dialect));
    });
  }
  if (orig.type === 'array') out.push(...lostInformation(orig.items as Node, node.items as Node, `${path}[]`, dialect));
  return out;
}

describe('nothing the vendor subsets cannot express is lost', () => {
  it.each(all.map((t) => [t.name, t]))('%s: OpenAI strict', (_n, tool) => {
    const parameters = openaiTool(tool, { strict: true }).function.parameters;
    expect(lostInformation(tool.inputSchema, parameters, '', 'strict')).toEqual([]);
  });
  it.each(all.map((t) => [t.name, t]))('%s: Gemini', (_n, tool) => {
    const parameters = geminiFunctionDeclaration(tool).parameters ?? { type: 'OBJECT', properties: {} };
    expect(lostInformation(tool.inputSchema, parameters as Node, '', 'gemini')).toEqual([]);
  });
  it.each(all.map((t) => [t.name, t]))('%s: Anthropic, MCP and plain OpenAI carry the schema itself', (_n, tool) => {
    const { $id: _id, title: _title, description: _d, ...schema } = tool.inputSchema;
    expect(anthropicTool(tool).input_schema).toEqual(schema);
    // MCP: the same, but a free-form object is JSON text (for clients converting to strict mode), its description kept.
    expect(mcpTool(tool).inputSchema).toEqual(asMcpSchema(schema));
    expect(openaiTool(tool).function.parameters).toEqual(schema);
  });
});

/** What MCP lists for a schema: each free-form object (no declared properties) a string holding its JSON. */
function asMcpSchema(s: Node): unknown {
  if (s.type === 'object' && s.properties === undefined) {
    return { type: 'string', description: expect.stringContaining('A JSON object, written as text.') };
  }
  if (s.type === 'array' && s.items) return { ...s, items: asMcpSchema(s.items as Node) };
  if (s.type === 'object') {
    const props = Object.entries(s.properties as Record<string, Node>).map(([k, v]) => [k, asMcpSchema(v)]);
    return { ...s, properties: Object.fromEntries(props) };
  }
  return s;
}

/** The arguments a model following the MCP schema writes for an input: each free-form object as its JSON text. */
function asMcpModel(schema: Node, value: unknown): unknown {
  if (schema.type === 'object' && schema.properties === undefined) return JSON.stringify(value);
  if (schema.type === 'array' && Array.isArray(value)) return value.map((v) => asMcpModel(schema.items as Node, v));
  if (schema.type === 'object' && isNode(value)) {
    const props = schema.properties as Record<string, Node>;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, props[k] ? asMcpModel(props[k], v) : v]));
  }
  return value;
}

/** The arguments a strict-mode model produces for an input: every property present, absent ones null. */
function asStrictModel(vendor: Node, value: unknown): unknown {
  const { node } = unwrapNullable(vendor);
  if (value === undefined) return null;
  const type = typeOf(node);
  if (type === 'string' && isNode(value)) return JSON.stringify(value);
  if (type === 'array' && Array.isArray(value)) return value.map((v) => asStrictModel(node.items as Node, v));
  if (type === 'object' && isNode(value)) {
    return Object.fromEntries(
      Object.entries(node.properties as Record<string, Node>).map(([n, p]) => [n, asStrictModel(p, value[n])]),
    );
  }
  return value;
}

/** The arguments a Gemini model produces for an input, with the declaration's parameter names. */
function asGeminiModel(vendor: Node, orig: Node, value: unknown): unknown {
  if (vendor.type === 'STRING' && isNode(value)) return JSON.stringify(value);
  if (vendor.type === 'ARRAY' && Array.isArray(value))
    return value.map((v) => asGeminiModel(vendor.items as Node, orig.items as Node, v));
  if (vendor.type === 'OBJECT' && isNode(value)) {
    const vendorProps = Object.entries(vendor.properties as Record<string, Node>);
    const out: Node = {};
    Object.entries(orig.properties as Record<string, Node>).forEach(([name, p], i) => {
      const [vendorName, vp] = vendorProps[i]!;
      if (value[name] !== undefined) out[vendorName] = asGeminiModel(vp, p, value[name]);
    });
    return out;
  }
  return value;
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
function conforms(schema: Node, value: unknown): string[] {
  const validate = ajv.compile(schema);
  return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

function roundTrip(tool: ToolDefinition, format: LlmFormat, strict: boolean) {
  for (const example of tool.examples) {
    const original = structuredClone(example.input);
    let args: unknown = original;
    if (format === 'openai' && strict) {
      const parameters = openaiTool(tool, { strict: true }).function.parameters;
      args = asStrictModel(parameters, original);
      expect(conforms(parameters, args)).toEqual([]);
    } else if (format === 'gemini') {
      const parameters = geminiFunctionDeclaration(tool).parameters;
      args = parameters ? asGeminiModel(parameters, tool.inputSchema, original) : {};
      if (parameters) expect(conforms(geminiAsJsonSchema(parameters as Node), args)).toEqual([]);
    } else {
      if (format === 'mcp') args = asMcpModel(tool.inputSchema, original);
      const def = llmTool(tool, format) as unknown as Node;
      const schema = (def.input_schema ?? def.inputSchema ?? (def.function as Node | undefined)?.parameters) as Node;
      expect(conforms(schema, args)).toEqual([]);
    }
    // OpenAI sends a call's arguments as JSON text; the other vendors as an object
    const sent = format === 'openai' ? JSON.stringify(args) : args;
    const back = inputFromModel(tool, format, sent, { strict });
    expect(back.errors).toEqual([]);
    expect(back.input).toEqual(example.input);
    expect(validateToolInput(tool, structuredClone(back.input))).toEqual([]);
  }
}

describe('round trip of every example: vendor shape → inputFromModel → the tool validator', () => {
  it('every tool has an example to send', () => {
    expect(all.filter((t) => !t.examples.length).map(byName)).toEqual([]);
  });
  it.each(all.map((t) => [t.name, t]))('%s: OpenAI strict', (_n, tool) => roundTrip(tool, 'openai', true));
  it.each(all.map((t) => [t.name, t]))('%s: OpenAI', (_n, tool) => roundTrip(tool, 'openai', false));
  it.each(all.map((t) => [t.name, t]))('%s: Gemini', (_n, tool) => roundTrip(tool, 'gemini', false));
  it.each(all.map((t) => [t.name, t]))('%s: Anthropic', (_n, tool) => roundTrip(tool, 'anthropic', false));
  it.each(all.map((t) => [t.name, t]))('%s: MCP', (_n, tool) => roundTrip(tool, 'mcp', false));
  it('gives every MCP tool the annotations its YAML declares, with its human title', () => {
    for (const t of all) {
      const listed = llmTool(t, 'mcp') as { annotations?: Record<string, unknown> };
      expect(listed.annotations, t.name).toEqual({ title: t.title, ...t.annotations });
      expect(t.title, t.name).not.toBe(t.name);
    }
  });
});

const tool = (name: string) => tools.get(name)!;

describe('mapping back', () => {
  it('drops the nulls strict mode puts for optional properties, nested ones too', () => {
    const t = tool('scraper_call_actor');
    const back = inputFromModel(
      t,
      'openai',
      {
        actor: 'apify/rag-web-browser',
        input: '{"query":"acme"}',
        async: null,
        callOptions: { memory: null, timeout: 60 },
        previewOutput: null,
      },
      { strict: true },
    );
    expect(back).toEqual({
      input: { actor: 'apify/rag-web-browser', input: { query: 'acme' }, callOptions: { timeout: 60 } },
      errors: [],
    });
    const input = back.input as Node;
    expect(validateToolInput(t, input)).toEqual([]);
    expect(input.previewOutput).toBe(true);
  });

  it('keeps a null given for a required property, which the validator then names', () => {
    const t = tool('helpdesk_ticket_create');
    const back = inputFromModel(t, 'openai', { comment_body: null, subject: null }, { strict: true });
    expect(back.input).toEqual({ comment_body: null });
    expect(validateToolInput(t, back.input)).toEqual([{ field: 'comment_body', message: 'must be a string' }]);
  });

  it('still enforces what only the description told the model (a minimum length)', () => {
    const t = tool('helpdesk_ticket_create');
    const described = openaiTool(t, { strict: true }).function.parameters as { properties: Record<string, Node> };
    expect(described.properties.comment_body!.minLength).toBeUndefined();
    expect(described.properties.comment_body!.description).toContain('At least 1 character.');
    const back = inputFromModel(t, 'openai', JSON.stringify({ comment_body: '' }), { strict: true });
    expect(validateToolInput(t, back.input)).toEqual([{ field: 'comment_body', message: 'must not be empty' }]);
  });

  it('names a JSON-text field that is not a JSON object', () => {
    const t = tool('crm_contact_update');
    for (const text of ['{"firstname":', '["a"]', 'null']) {
      const back = inputFromModel(t, 'openai', { contact_id: '101', props: text }, { strict: true });
      expect(back.errors).toEqual([
        { field: 'props', message: 'must be a JSON object, written as text in this tool format' },
      ]);
    }
    const items = inputFromModel(tool('docs_update_document'), 'gemini', { document_id: 'd', requests: ['{}', 'x'] });
    expect(items.errors).toEqual([
      { field: 'requests[1]', message: 'must be a JSON object, written as text in this tool format' },
    ]);
  });

  it('refuses arguments that are not JSON, saying so', () => {
    const back = inputFromModel(tool('mail_send_message'), 'openai', '{"subject": "Hi"');
    expect(back.errors).toHaveLength(1);
    expect(back.errors[0]!.field).toBe('(input)');
    expect(back.errors[0]!.message).toMatch(/^must be a JSON object \(the arguments are not JSON: /);
  });

  it('gives Gemini-renamed parameters their names back, and leaves unknown ones for the validator', () => {
    const t = tool('mail_list_messages');
    const declared = Object.keys(geminiFunctionDeclaration(t).parameters!.properties!);
    expect(declared).toEqual(['_filter', '_orderby', '_select', '_skip', '_top', 'response_format', 'next_cursor']);
    const back = inputFromModel(t, 'gemini', { _top: 5, _filter: 'isRead eq false', top: 3 });
    expect(back.input).toEqual({ $top: 5, $filter: 'isRead eq false', top: 3 });
    expect(validateToolInput(t, back.input)).toEqual([
      { field: 'top', message: 'is not a parameter of mail_list_messages (did you mean $top?)' },
    ]);
  });

  it('passes other formats through unchanged: null stays null for the validator to refuse', () => {
    const t = tool('helpdesk_ticket_create');
    const back = inputFromModel(t, 'anthropic', { comment_body: 'x', subject: null });
    expect(back.input).toEqual({ comment_body: 'x', subject: null });
    expect(validateToolInput(t, back.input)).toEqual([{ field: 'subject', message: 'must be a string' }]);
  });
});

describe('reading plain OpenAI arguments as strict mode ones (what handleToolCalls does for every OpenAI call)', () => {
  // A tool call does not say whether the model had the strict or the plain definitions; reading every OpenAI call
  // the strict way must then change nothing a plain-mode model sends that the tool's schema accepts.
  it.each(all.map((t) => [t.name, t]))('%s: every example comes back unchanged', (_n, tool) => {
    for (const example of tool.examples) {
      const back = inputFromModel(tool, 'openai', JSON.stringify(example.input), { strict: true });
      expect(back.errors).toEqual([]);
      expect(back.input).toEqual(example.input);
    }
  });
});

describe('the converter', () => {
  const synthetic = (inputSchema: Node): ToolDefinition => ({
    ...tool('helpdesk_ticket_create'),
    name: 'demo_tool',
    inputSchema,
  });

  it('refuses a schema construct it has no mapping for, naming where it is', () => {
    const t = synthetic({
      type: 'object',
      properties: { when: { type: 'string', oneOf: [{ pattern: '^a' }, { pattern: '^b' }] } },
    });
    expect(() => openaiTool(t, { strict: true })).toThrow('demo_tool.when: the JSON Schema keyword "oneOf"');
    expect(() => geminiFunctionDeclaration(t)).toThrow('demo_tool.when: the JSON Schema keyword "oneOf"');
  });

  it('leaves Gemini parameters out for a tool without any, and keeps an empty strict object', () => {
    const t = synthetic({ type: 'object', properties: {}, additionalProperties: false });
    expect(geminiFunctionDeclaration(t)).toEqual({
      name: 'demo_tool',
      description: agentDescription(t),
      responseJsonSchema: t.outputSchema,
    });
    expect(openaiTool(t, { strict: true }).function.parameters).toEqual({
      type: 'object',
      properties: {},
      required: [],
      additionalProperties: false,
    });
  });

  it('builds each definition once and hands out a frozen copy', () => {
    const t = tool('mail_send_message');
    expect(openaiTool(t, { strict: true })).toBe(openaiTool(t, { strict: true }));
    expect(Object.isFrozen(openaiTool(t, { strict: true }).function.parameters)).toBe(true);
    expect(t.inputSchema.$id).toBe('mail_send_message');
  });
});

describe("built-in names in a model's arguments (issue 12, point 6)", () => {
  const tool = tools.get('prodata_search_people')!;
  for (const format of ['gemini', 'openai'] as const)
    it(`${format}: __proto__ and constructor stay own fields, refused by the validator, the prototype untouched`, () => {
      const sent = '{"search": "x", "__proto__": {"page": 5000, "search": "polluted"}, "constructor": "c"}';
      const back = inputFromModel(tool, format, format === 'gemini' ? JSON.parse(sent) : sent, { strict: true });
      const input = back.input as Record<string, unknown>;
      expect(Object.getPrototypeOf(input)).toBe(Object.prototype);
      expect(Object.keys(input).sort()).toEqual(['__proto__', 'constructor', 'search']);
      expect(input.page).toBeUndefined();
      const fields = validateToolInput(tool, structuredClone(input)).map((e) => e.field);
      expect(fields).toContain('__proto__');
      expect(fields).toContain('constructor');
    });
});

describe('$merge of an object a client sent (issue 12, point 6)', () => {
  it('keeps __proto__ as an own field and leaves the prototype alone', () => {
    const merged = merge([{ a: 1 }, JSON.parse('{"__proto__": {"b": 2}}')])!;
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(Object.keys(merged)).toEqual(['a', '__proto__']);
    expect((merged as { b?: number }).b).toBeUndefined();
    expect(JSON.stringify(merged)).toBe('{"a":1,"__proto__":{"b":2}}');
  });
});
