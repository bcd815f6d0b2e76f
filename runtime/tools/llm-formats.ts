/**
 * A tool's definition in each LLM vendor's own tool-calling shape, and the way back from a model's arguments
 * to the tool's input. The service always validates that input with the tool's full JSON Schema (its
 * precompiled validator and cross-field rules), so a vendor subset only has to guide the model; whatever a
 * subset cannot express is written into the description of the parameter it belongs to (for example
 * "At least 1 character. Matches the regular expression `^\d{4}-\d{2}-\d{2}$`."), never dropped.
 *
 * The vendors' rules implemented here, and where they are documented:
 *
 * OpenAI (platform.openai.com/docs/guides/function-calling; /docs/guides/structured-outputs#supported-schemas;
 * API reference of Chat Completions `tools` and Responses `tools`):
 * - Chat Completions: `{type: "function", function: {name, description, parameters, strict}}`; `strict` defaults
 *   to false. Responses API: the same fields flat, `{type: "function", name, description, parameters, strict}`,
 *   and there `strict` defaults to true, so it is always written out. `openaiTool` emits the Chat Completions
 *   shape (what most SDKs and OpenAI-compatible servers take) and, with `api: "responses"`, the Responses one.
 * - Function names match ^[a-zA-Z0-9_-]{1,64}$; a function description longer than 1024 characters has been
 *   refused (`string_above_max_length`), so descriptions stay within it.
 * - Strict mode (structured outputs): the root is an object (not `anyOf`); every object has
 *   `additionalProperties: false` and lists every property in `required`; an optional field is expressed as
 *   nullable (`"type": ["string", "null"]`, `null` added to an `enum`, or `anyOf: [schema, {"type": "null"}]`).
 *   Supported keywords: type, description, properties, required, additionalProperties, items, enum, const,
 *   anyOf, $defs/$ref; for strings `pattern` and `format` (date-time, time, date, duration, email, hostname,
 *   ipv4, ipv6, uuid); for numbers minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf; for arrays
 *   minItems, maxItems. Not supported: allOf, not, if/then/else, dependentRequired, dependentSchemas,
 *   patternProperties and the other keywords; `default`, `minLength` and `maxLength` are refused by the API
 *   (openai-node's helpers document it), so they go into descriptions. Limits: at most 10 levels of nesting,
 *   5,000 object properties, 1,000 enum values, 120,000 characters of property names, enum and const values.
 * - A free-form object (no declared properties) cannot exist under those rules; strict mode takes it as a
 *   string holding the object's JSON, which `inputFromModel` parses back.
 *
 * Anthropic (docs.anthropic.com, "Tool use", "How to implement tool use"): `{name, description, input_schema}`;
 * the name matches ^[a-zA-Z0-9_-]{1,64}$; `input_schema` is a JSON Schema object with `type: "object"` at the
 * root. The tool's own schema is passed through (without the root's `$id`, `title` and `description`, which
 * repeat the name and the tool's description).
 *
 * Gemini (ai.google.dev/api/caching#Tool, FunctionDeclaration and Schema; the same Schema message on Vertex AI):
 * - `{name, description, parameters}` inside a Tool's `functionDeclarations`. The name starts with a letter or
 *   an underscore and has at most 64 characters of a-z, A-Z, 0-9, underscore, dot, colon and dash; parameter
 *   names start with a letter or an underscore and contain only a-z, A-Z, 0-9 and underscores (at most 64), so
 *   other names (`$filter`) are rewritten (`_filter`) and mapped back. `parameters` is left out for a function
 *   without parameters (an OBJECT with empty `properties` is refused: "should be non-empty for OBJECT type").
 * - `parameters` is the API's Schema message, a subset of the OpenAPI 3.0 schema object, and a field it does
 *   not have is refused ("Cannot find field"): type (STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT, NULL),
 *   format, title, description, nullable, enum (strings only), items, minItems, maxItems, properties, required
 *   (only names that are in `properties`), minProperties, maxProperties, minLength, maxLength, pattern, minimum,
 *   maximum, default, example, anyOf, propertyOrdering. Not there: additionalProperties, exclusiveMinimum,
 *   exclusiveMaximum, multipleOf, const, $id, $ref, oneOf, allOf, type lists. `format` on a string is only
 *   "enum" or "date-time" on the Gemini API. So `number` with `multipleOf: 1` becomes INTEGER, an integer
 *   `enum` goes into the description, and a free-form object becomes a STRING holding JSON, as in strict mode.
 *
 * MCP (modelcontextprotocol.io specification 2025-11-25, "Tools"): a Tool is `{name, title, description,
 * inputSchema, outputSchema}`; both schemas are JSON Schema (2020-12 by default) objects with `type: "object"`;
 * names are 1 to 128 characters of A-Z, a-z, 0-9, underscore, dash and dot. MCP tools carry the YAML's annotations
 * and its output schema (a result then carries `structuredContent` that conforms to it). A free-form object is
 * listed as a string holding its JSON, as in OpenAI strict mode, so that clients converting MCP schemas to strict
 * mode (the OpenAI Agents SDK) take every tool; an object sent anyway is taken too.
 *
 * Output schemas: of the function-calling formats only Gemini's FunctionDeclaration takes one
 * (`responseJsonSchema`, JSON Schema; mutually exclusive with the OpenAPI-subset `response`); OpenAI's and
 * Anthropic's tool definitions have no field for it (Anthropic refuses unknown keys).
 *
 * Cross-field rules (one-of groups, conditional requirements) are not part of `inputSchema`; the service checks
 * them after validation (`checkRules`) and names the failing field, whichever format the model used.
 */
import { agentDescription } from '../../core/agent-description.ts';
import type { FieldError, ToolDefinition } from '../../core/tool-types.ts';
import { ownValue, setOwn } from '../../core/own.ts';

export type JsonSchema = Record<string, unknown>;
export type LlmFormat = 'openai' | 'anthropic' | 'gemini' | 'mcp';
export const LLM_FORMATS: readonly LlmFormat[] = ['openai', 'anthropic', 'gemini', 'mcp'];

export interface FormatOptions {
  /** OpenAI only: strict mode (structured outputs). */
  strict?: boolean;
  /** OpenAI only: the Chat Completions shape (default) or the Responses API's flat one. */
  api?: 'chat' | 'responses';
}

export interface OpenAIChatTool {
  type: 'function';
  function: { name: string; description: string; parameters: JsonSchema; strict?: boolean };
}
export interface OpenAIResponsesTool {
  type: 'function';
  name: string;
  description: string;
  parameters: JsonSchema;
  strict: boolean;
}
export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: JsonSchema;
}
/** A type alias, not an interface, so that it reads as a plain record of fields. */
export type GeminiSchema = {
  type: 'STRING' | 'NUMBER' | 'INTEGER' | 'BOOLEAN' | 'ARRAY' | 'OBJECT';
  description?: string;
  enum?: string[];
  items?: GeminiSchema;
  minItems?: number;
  maxItems?: number;
  properties?: Record<string, GeminiSchema>;
  required?: string[];
  minProperties?: number;
  maxProperties?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  default?: unknown;
};
export interface GeminiFunctionDeclaration {
  name: string;
  description: string;
  parameters?: GeminiSchema;
  /** The function's answer, as JSON Schema (the API's `responseJsonSchema`). */
  responseJsonSchema?: JsonSchema;
}
export interface McpTool {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchema;
  /** The answer's JSON Schema (an object): the fields of the concise answer, open to the detailed answer's others. */
  outputSchema: JsonSchema;
  annotations?: {
    title: string;
    readOnlyHint: boolean;
    destructiveHint: boolean;
    idempotentHint: boolean;
    openWorldHint: boolean;
  };
}
export type LlmTool = OpenAIChatTool | OpenAIResponsesTool | AnthropicTool | GeminiFunctionDeclaration | McpTool;

/** The schema keywords the converters understand; anything else in a tool's schema is a generator change to map. */
const KNOWN_KEYWORDS = new Set([
  '$id',
  'title',
  'description',
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'default',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'writeOnly',
  'readOnly',
  'examples',
]);
const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array']);
const OPENAI_STRICT_FORMATS = new Set([
  'date-time',
  'time',
  'date',
  'duration',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'uuid',
]);
const GEMINI_STRING_FORMATS = new Set(['enum', 'date-time']);

/** Keywords each target keeps as keywords, by JSON type; every other constraint goes into the description. */
const KEEP: Record<'openai-strict' | 'gemini', Record<string, ReadonlySet<string>>> = {
  'openai-strict': {
    string: new Set(['enum', 'const', 'pattern', 'format']),
    number: new Set(['enum', 'const', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf']),
    integer: new Set(['enum', 'const', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf']),
    boolean: new Set(['enum', 'const']),
    array: new Set(['minItems', 'maxItems']),
    object: new Set(),
  },
  gemini: {
    string: new Set(['enum', 'format', 'minLength', 'maxLength', 'pattern', 'default']),
    number: new Set(['minimum', 'maximum', 'default']),
    integer: new Set(['minimum', 'maximum', 'default']),
    boolean: new Set(['default']),
    array: new Set(['minItems', 'maxItems', 'default']),
    object: new Set(['minProperties', 'maxProperties', 'default']),
  },
};

/** Annotations and structure: never constraints to carry over. */
const STRUCTURAL = new Set([
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

const plural = (n: unknown, one: string, many: string) => `${n as number} ${n === 1 ? one : many}`;

/** The sentence that tells the model about a constraint its schema dialect cannot carry. */
function constraintNote(keyword: string, value: unknown): string {
  switch (keyword) {
    case 'minLength':
      return `At least ${plural(value, 'character', 'characters')}.`;
    case 'maxLength':
      return `At most ${plural(value, 'character', 'characters')}.`;
    case 'pattern':
      return `Matches the regular expression \`${String(value)}\`.`;
    case 'format':
      return `Format: ${String(value)}.`;
    case 'minimum':
      return `At least ${String(value)}.`;
    case 'maximum':
      return `At most ${String(value)}.`;
    case 'exclusiveMinimum':
      return `Greater than ${String(value)}.`;
    case 'exclusiveMaximum':
      return `Less than ${String(value)}.`;
    case 'multipleOf':
      return `A multiple of ${String(value)}.`;
    case 'minItems':
      return `At least ${plural(value, 'item', 'items')}.`;
    case 'maxItems':
      return `At most ${plural(value, 'item', 'items')}.`;
    case 'minProperties':
      return `At least ${plural(value, 'entry', 'entries')}.`;
    case 'maxProperties':
      return `At most ${plural(value, 'entry', 'entries')}.`;
    case 'enum':
      return `One of: ${(value as unknown[]).map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ')}.`;
    case 'const':
      return `Always ${JSON.stringify(value)}.`;
    case 'default':
      return `Default: ${JSON.stringify(value)}.`;
    default:
      throw new Error(`no description for the JSON Schema keyword "${keyword}"`);
  }
}

function withNotes(description: unknown, notes: string[]): string | undefined {
  const base = typeof description === 'string' ? description.trim() : '';
  if (!notes.length) return base || undefined;
  const lead = base && !/[.!?:)]$/.test(base) ? `${base}.` : base;
  return [lead, ...notes].filter(Boolean).join(' ');
}

/** A property whose value is an object of any shape: strict mode and Gemini cannot declare one. */
const isFreeForm = (s: JsonSchema) => s.type === 'object' && s.properties === undefined;
/** `{"type": "number", "multipleOf": 1}`, the generator's whole number, is an integer for every dialect. */
const isWholeNumber = (s: JsonSchema) => s.type === 'number' && s.multipleOf === 1;

function checkKnown(s: JsonSchema, where: string): void {
  for (const k of Object.keys(s)) {
    if (!KNOWN_KEYWORDS.has(k))
      throw new Error(`${where}: the JSON Schema keyword "${k}" has no mapping to LLM tool formats`);
  }
  if (typeof s.type !== 'string' || !TYPES.has(s.type)) {
    throw new Error(`${where}: a schema needs one "type" of ${[...TYPES].join(', ')} to map to LLM tool formats`);
  }
  if (s.properties !== undefined && s.additionalProperties !== undefined && s.additionalProperties !== false) {
    throw new Error(`${where}: an object with both declared and additional properties has no strict-mode form`);
  }
}

const entries = (s: JsonSchema) => Object.entries((s.properties as Record<string, JsonSchema> | undefined) ?? {});
const requiredOf = (s: JsonSchema) => new Set((s.required as string[] | undefined) ?? []);

/** The constraint keywords of `s` the target does not keep, as description sentences. */
function lostNotes(s: JsonSchema, type: string, target: 'openai-strict' | 'gemini'): string[] {
  const keep = KEEP[target][type]!;
  const notes: string[] = [];
  for (const [k, v] of Object.entries(s)) {
    if (STRUCTURAL.has(k)) continue;
    if (k === 'multipleOf' && isWholeNumber(s)) continue;
    if (k === 'format' && !(target === 'openai-strict' ? OPENAI_STRICT_FORMATS : GEMINI_STRING_FORMATS).has(String(v)))
      notes.push(constraintNote(k, v));
    else if (k === 'enum' && target === 'gemini' && (v as unknown[]).some((e) => typeof e !== 'string'))
      notes.push(constraintNote(k, v));
    else if (!keep.has(k)) notes.push(constraintNote(k, v));
  }
  return notes;
}

/** Every constraint of a free-form object, for the string that carries its JSON. */
function freeFormNotes(s: JsonSchema): string[] {
  const notes = ['A JSON object, written as text.'];
  for (const [k, v] of Object.entries(s)) if (!STRUCTURAL.has(k)) notes.push(constraintNote(k, v));
  return notes;
}

function strictNode(s: JsonSchema, where: string, nullable: boolean): JsonSchema {
  checkKnown(s, where);
  if (isFreeForm(s)) {
    return { type: nullable ? ['string', 'null'] : 'string', description: withNotes(s.description, freeFormNotes(s)) };
  }
  const type = isWholeNumber(s) ? 'integer' : (s.type as string);
  const out: JsonSchema = {};
  const description = withNotes(s.description, lostNotes(s, s.type as string, 'openai-strict'));
  if (type === 'object') {
    const required = requiredOf(s);
    const properties: Record<string, JsonSchema> = {};
    for (const [name, p] of entries(s)) properties[name] = strictNode(p, `${where}.${name}`, !required.has(name));
    out.type = 'object';
    out.properties = properties;
    out.required = Object.keys(properties);
    out.additionalProperties = false;
  } else if (type === 'array') {
    out.type = 'array';
    out.items = strictNode(s.items as JsonSchema, `${where}[]`, false);
  } else {
    out.type = nullable ? [type, 'null'] : type;
  }
  const keep = KEEP['openai-strict'][s.type as string]!;
  for (const [k, v] of Object.entries(s)) {
    if (!keep.has(k) || (k === 'multipleOf' && isWholeNumber(s))) continue;
    if (k === 'format' && !OPENAI_STRICT_FORMATS.has(String(v))) continue;
    out[k] = k === 'enum' && nullable ? [...(v as unknown[]), null] : v;
  }
  if (nullable && (type === 'object' || type === 'array')) {
    return description === undefined
      ? { anyOf: [out, { type: 'null' }] }
      : { description, anyOf: [out, { type: 'null' }] };
  }
  return description === undefined ? out : { description, ...out };
}

/** Gemini parameter names: a letter or underscore first, then letters, digits and underscores, at most 64. */
export function geminiNames(names: readonly string[]): Map<string, string> {
  const taken = new Set(names.filter((n) => /^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(n)));
  const out = new Map<string, string>();
  for (const name of names) {
    if (taken.has(name)) {
      out.set(name, name);
      continue;
    }
    let candidate = name.replace(/[^A-Za-z0-9_]/g, '_');
    if (!/^[A-Za-z_]/.test(candidate)) candidate = `_${candidate}`;
    candidate = candidate.slice(0, 64);
    while (taken.has(candidate)) candidate = `${candidate.slice(0, 63)}_`;
    taken.add(candidate);
    out.set(name, candidate);
  }
  return out;
}

function geminiNode(s: JsonSchema, where: string): GeminiSchema {
  checkKnown(s, where);
  if (isFreeForm(s)) {
    const description = withNotes(s.description, freeFormNotes(s));
    return description === undefined ? { type: 'STRING' } : { type: 'STRING', description };
  }
  const type = (isWholeNumber(s) ? 'integer' : (s.type as string)).toUpperCase() as GeminiSchema['type'];
  const out: GeminiSchema = { type };
  const description = withNotes(s.description, lostNotes(s, s.type as string, 'gemini'));
  if (description !== undefined) out.description = description;
  if (type === 'OBJECT') {
    const names = geminiNames(entries(s).map(([n]) => n));
    const properties: Record<string, GeminiSchema> = {};
    for (const [name, p] of entries(s)) properties[names.get(name)!] = geminiNode(p, `${where}.${name}`);
    out.properties = properties;
    const required = [...requiredOf(s)].filter((n) => names.has(n)).map((n) => names.get(n)!);
    if (required.length) out.required = required;
  } else if (type === 'ARRAY') {
    out.items = geminiNode(s.items as JsonSchema, `${where}[]`);
  }
  const keep = KEEP.gemini[s.type as string]!;
  for (const [k, v] of Object.entries(s)) {
    if (!keep.has(k)) continue;
    if (k === 'format' && !GEMINI_STRING_FORMATS.has(String(v))) continue;
    if (k === 'enum' && (v as unknown[]).some((e) => typeof e !== 'string')) continue;
    (out as Record<string, unknown>)[k] = v;
  }
  return out;
}

/** The tool's schema for dialects that take JSON Schema as it is, without what repeats the name and description. */
function plainSchema(tool: ToolDefinition): JsonSchema {
  const { $id: _id, title: _title, description: _description, ...rest } = tool.inputSchema;
  return structuredClone(rest);
}

function rootSchema(tool: ToolDefinition): JsonSchema {
  const s = tool.inputSchema;
  if (s.type !== 'object' || s.properties === undefined) {
    throw new Error(`${tool.name}: an input schema must be an object with declared properties`);
  }
  return s;
}

function strictParameters(tool: ToolDefinition): JsonSchema {
  const { description: _description, ...schema } = strictNode(rootSchema(tool), tool.name, false);
  return schema;
}

function geminiParameters(tool: ToolDefinition): GeminiSchema | undefined {
  const root = rootSchema(tool);
  if (!entries(root).length) return undefined;
  const { description: _description, ...schema } = geminiNode(root, tool.name);
  return schema;
}

const memo = new WeakMap<ToolDefinition, Map<string, LlmTool>>();

function cached<T extends LlmTool>(tool: ToolDefinition, key: string, make: () => T): T {
  let byKey = memo.get(tool);
  if (!byKey) memo.set(tool, (byKey = new Map<string, LlmTool>()));
  let out = byKey.get(key);
  if (!out) byKey.set(key, (out = deepFreeze(make())));
  return out as T;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

export function openaiTool(tool: ToolDefinition, options?: { strict?: boolean; api?: 'chat' }): OpenAIChatTool;
export function openaiTool(tool: ToolDefinition, options: { strict?: boolean; api: 'responses' }): OpenAIResponsesTool;
export function openaiTool(tool: ToolDefinition, options: FormatOptions = {}): OpenAIChatTool | OpenAIResponsesTool {
  const strict = options.strict === true;
  const api = options.api ?? 'chat';
  return cached(tool, `openai:${api}:${strict}`, () => {
    const parameters = strict ? strictParameters(tool) : plainSchema(tool);
    if (api === 'responses')
      return { type: 'function', name: tool.name, description: agentDescription(tool), parameters, strict };
    return {
      type: 'function',
      function: {
        name: tool.name,
        description: agentDescription(tool),
        parameters,
        ...(strict ? { strict: true } : {}),
      },
    };
  });
}

export function anthropicTool(tool: ToolDefinition): AnthropicTool {
  return cached(tool, 'anthropic', () => ({
    name: tool.name,
    description: agentDescription(tool),
    input_schema: plainSchema(tool),
  }));
}

export function geminiFunctionDeclaration(tool: ToolDefinition): GeminiFunctionDeclaration {
  return cached(tool, 'gemini', () => {
    const parameters = geminiParameters(tool);
    return {
      name: tool.name,
      description: agentDescription(tool),
      ...(parameters ? { parameters } : {}),
      responseJsonSchema: structuredClone(tool.outputSchema),
    };
  });
}

/**
 * A schema as MCP lists it: the tool's own, except that a free-form object (no declared properties) is a string
 * holding the object's JSON, as in OpenAI strict mode. MCP clients hand the schema to models as it is, and the
 * strict conversions of clients (the OpenAI Agents SDK's `convertSchemasToStrict`) refuse an open object: with this
 * form every tool converts. `inputFromModel(tool, 'mcp', …)` parses the text back (an object is taken as well).
 */
function mcpNode(s: JsonSchema): JsonSchema {
  if (isFreeForm(s)) return { type: 'string', description: withNotes(s.description, freeFormNotes(s)) };
  if (s.type === 'array' && s.items && typeof s.items === 'object') {
    return { ...s, items: mcpNode(s.items as JsonSchema) };
  }
  if (s.type === 'object' && s.properties !== undefined) {
    const properties: Record<string, JsonSchema> = {};
    for (const [name, p] of entries(s)) setOwn(properties, name, mcpNode(p));
    return { ...s, properties };
  }
  return s;
}

export function mcpTool(tool: ToolDefinition): McpTool {
  return cached(tool, 'mcp', () => ({
    name: tool.name,
    title: tool.title,
    description: agentDescription(tool),
    inputSchema: mcpNode(plainSchema(tool)),
    outputSchema: structuredClone(tool.outputSchema),
    // MCP's tool annotations, as the YAML declares them (the MCP server lists the same object).
    ...(tool.annotations ? { annotations: { title: tool.title, ...tool.annotations } } : {}),
  }));
}

/** The tool's definition in one vendor's shape (frozen, built once per tool and shape). */
export function llmTool(tool: ToolDefinition, format: LlmFormat, options: FormatOptions = {}): LlmTool {
  switch (format) {
    case 'openai':
      return options.api === 'responses'
        ? openaiTool(tool, { strict: options.strict, api: 'responses' })
        : openaiTool(tool, { strict: options.strict });
    case 'anthropic':
      return anthropicTool(tool);
    case 'gemini':
      return geminiFunctionDeclaration(tool);
    case 'mcp':
      return mcpTool(tool);
  }
}

function fieldPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent || '(input)'}[${key}]`;
  return parent ? `${parent}.${key}` : key;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The tool input a model's arguments stand for, to be validated with the tool's own validator. Arguments may be
 * the JSON text OpenAI sends. For OpenAI strict mode, null for an optional property means "not given" and is
 * dropped; for strict mode, Gemini and MCP, a free-form object arrives as JSON text and is parsed; for Gemini,
 * rewritten parameter names get their own back. Anything else is left for the validator to report.
 * `errors` lists what could not be read (arguments or a JSON-text field that is not JSON).
 */
export function inputFromModel(
  tool: ToolDefinition,
  format: LlmFormat,
  args: unknown,
  options: Pick<FormatOptions, 'strict'> = {},
): { input: unknown; errors: FieldError[] } {
  const errors: FieldError[] = [];
  let value = args;
  if (typeof args === 'string') {
    try {
      value = JSON.parse(args);
    } catch (e) {
      return {
        input: args,
        errors: [
          { field: '(input)', message: `must be a JSON object (the arguments are not JSON: ${(e as Error).message})` },
        ],
      };
    }
  }
  const strict = format === 'openai' && options.strict === true;
  const gemini = format === 'gemini';
  if (!strict && !gemini && format !== 'mcp') return { input: value, errors };

  const walk = (s: JsonSchema, v: unknown, path: string): unknown => {
    if (isFreeForm(s) && typeof v === 'string') {
      try {
        const parsed: unknown = JSON.parse(v);
        if (isPlainObject(parsed)) return parsed;
      } catch {
        // reported below, as for any text that is not a JSON object
      }
      errors.push({ field: path || '(input)', message: 'must be a JSON object, written as text in this tool format' });
      return v;
    }
    if (s.type === 'array' && Array.isArray(v))
      return v.map((item, i) => walk(s.items as JsonSchema, item, fieldPath(path, i)));
    if (s.type !== 'object' || s.properties === undefined || !isPlainObject(v)) return v;
    const properties = s.properties as Record<string, JsonSchema>;
    const required = requiredOf(s);
    const original = gemini ? new Map([...geminiNames(Object.keys(properties))].map(([o, g]) => [g, o])) : undefined;
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(v)) {
      const name = original?.get(key) ?? key;
      const schema = ownValue(properties, name);
      if (!schema) {
        setOwn(out, key, item);
        continue;
      }
      if (strict && item === null && !required.has(name)) continue;
      setOwn(out, name, walk(schema, item, fieldPath(path, name)));
    }
    return out;
  };
  return { input: walk(tool.inputSchema, value, ''), errors };
}
