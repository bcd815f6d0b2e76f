/**
 * Each LLM vendor's documented rules for tool definitions, written as checkers that walk a definition and
 * report every breach (empty list: it conforms). They share no code with runtime/tools/llm-formats.ts on
 * purpose: the converter's header records the same rules with their sources, and these read them afresh.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { ToolSchema } from '@modelcontextprotocol/sdk/types.js';
import { asText } from './text.ts';

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Compiles a schema as JSON Schema 2020-12, refusing unknown keywords; returns the problem, if any. */
export function jsonSchemaProblem(schema: unknown): string | undefined {
  try {
    new Ajv2020({ strict: true, strictTypes: false, allowUnionTypes: true }).compile(schema as object);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

const OPENAI_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** OpenAI function tools, Chat Completions or Responses shape, strict or not. */
export function openaiToolViolations(tool: unknown, api: 'chat' | 'responses', strict: boolean): string[] {
  const out: string[] = [];
  if (!isNode(tool) || tool.type !== 'function') return ['a tool is {"type": "function", …}'];
  const fn = api === 'chat' ? tool.function : tool;
  if (!isNode(fn)) return ['Chat Completions tools carry their function under "function"'];
  const allowed = api === 'chat' ? ['type', 'function'] : ['type', 'name', 'description', 'parameters', 'strict'];
  for (const k of Object.keys(tool)) if (!allowed.includes(k)) out.push(`unknown tool field "${k}"`);
  if (api === 'chat') {
    for (const k of Object.keys(fn))
      if (!['name', 'description', 'parameters', 'strict'].includes(k)) out.push(`unknown function field "${k}"`);
    if (strict && fn.strict !== true) out.push('a strict Chat Completions tool sets function.strict: true');
    if (!strict && fn.strict === true) out.push('a non-strict tool must not set strict: true');
  } else if (fn.strict !== strict) {
    out.push(`a Responses tool states strict: ${strict} (the API's default is true)`);
  }
  if (typeof fn.name !== 'string' || !OPENAI_NAME.test(fn.name))
    out.push(`name ${String(fn.name)} breaks ${OPENAI_NAME}`);
  if (typeof fn.description !== 'string' || !fn.description) out.push('description missing');
  else if (fn.description.length > 1024) out.push(`description has ${fn.description.length} characters (max 1024)`);
  if (!isNode(fn.parameters) || fn.parameters.type !== 'object') out.push('parameters must be an object schema');
  else if (strict) out.push(...openaiStrictSchemaViolations(fn.parameters));
  else {
    const problem = jsonSchemaProblem(fn.parameters);
    if (problem) out.push(`parameters are not valid JSON Schema: ${problem}`);
  }
  return out;
}

const STRICT_FORMATS = ['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid'];
const STRICT_KEYWORDS: Record<string, string[]> = {
  any: ['type', 'description', 'enum', 'const', 'anyOf', '$defs', '$ref'],
  string: ['pattern', 'format'],
  number: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  integer: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  boolean: [],
  null: [],
  array: ['items', 'minItems', 'maxItems'],
  object: ['properties', 'required', 'additionalProperties'],
};
const JSON_TYPES = ['string', 'number', 'integer', 'boolean', 'null', 'array', 'object'];

function matchesType(value: unknown, types: string[]): boolean {
  return types.some((t) =>
    t === 'null'
      ? value === null
      : t === 'integer'
        ? Number.isInteger(value)
        : t === 'number'
          ? typeof value === 'number'
          : typeof value === t,
  );
}

/** OpenAI structured outputs ("Supported schemas"): the schema of a strict function tool. */
export function openaiStrictSchemaViolations(root: Node): string[] {
  const out: string[] = [];
  if (root.type !== 'object' || root.anyOf !== undefined) out.push('the root must be a plain object schema');
  let properties = 0;
  let enumValues = 0;
  let characters = 0;
  const walk = (node: unknown, path: string, depth: number) => {
    if (!isNode(node)) return void out.push(`${path}: not a schema`);
    if (node.anyOf !== undefined) {
      for (const k of Object.keys(node))
        if (k !== 'anyOf' && k !== 'description') out.push(`${path}: "${k}" beside anyOf`);
      if (!Array.isArray(node.anyOf) || !node.anyOf.length) return void out.push(`${path}: anyOf must list schemas`);
      node.anyOf.forEach((branch, i) => walk(branch, `${path}.anyOf[${i}]`, depth));
      return;
    }
    const types = (Array.isArray(node.type) ? node.type : [node.type]) as string[];
    if (!types.every((t) => JSON_TYPES.includes(t))) return void out.push(`${path}: type ${JSON.stringify(node.type)}`);
    const concrete = types.filter((t) => t !== 'null');
    if (concrete.length > 1) out.push(`${path}: more than one non-null type`);
    const allowed = new Set([...STRICT_KEYWORDS.any!, ...types.flatMap((t) => STRICT_KEYWORDS[t]!)]);
    for (const k of Object.keys(node)) if (!allowed.has(k)) out.push(`${path}: "${k}" is not supported in strict mode`);
    if (node.format !== undefined && !STRICT_FORMATS.includes(asText(node.format)))
      out.push(`${path}: format "${asText(node.format)}" is not supported`);
    if (node.enum !== undefined) {
      if (!Array.isArray(node.enum) || !node.enum.length) out.push(`${path}: enum must list values`);
      else {
        enumValues += node.enum.length;
        for (const v of node.enum) {
          if (!matchesType(v, types))
            out.push(`${path}: enum value ${JSON.stringify(v)} is not of type ${types.join(',')}`);
          if (typeof v === 'string') characters += v.length;
        }
        if (types.includes('null') && !node.enum.includes(null)) out.push(`${path}: a nullable enum must list null`);
      }
    }
    if (typeof node.const === 'string') characters += node.const.length;
    if (types.includes('object')) {
      if (depth > 10) out.push(`${path}: nested deeper than 10 levels`);
      if (node.additionalProperties !== false) out.push(`${path}: objects need additionalProperties: false`);
      const props = isNode(node.properties) ? node.properties : {};
      const names = Object.keys(props);
      properties += names.length;
      const required = Array.isArray(node.required) ? (node.required as string[]) : [];
      for (const n of names) if (!required.includes(n)) out.push(`${path}.${n}: every property must be required`);
      for (const r of required) if (!names.includes(r)) out.push(`${path}: required names unknown property ${r}`);
      for (const [n, p] of Object.entries(props)) {
        characters += n.length;
        walk(p, `${path}.${n}`, depth + 1);
      }
    }
    if (types.includes('array')) {
      if (node.items === undefined) out.push(`${path}: an array needs items`);
      else walk(node.items, `${path}[]`, depth);
    }
  };
  walk(root, '(root)', 1);
  if (properties > 5000) out.push(`${properties} object properties (max 5000)`);
  if (enumValues > 1000) out.push(`${enumValues} enum values (max 1000)`);
  if (characters > 120_000) out.push(`${characters} characters of names and values (max 120000)`);
  return out;
}

const ANTHROPIC_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Anthropic Messages API `tools[]` (client tools). */
export function anthropicToolViolations(tool: unknown): string[] {
  if (!isNode(tool)) return ['not an object'];
  const out: string[] = [];
  for (const k of Object.keys(tool))
    if (!['name', 'description', 'input_schema'].includes(k)) out.push(`unknown field "${k}"`);
  if (typeof tool.name !== 'string' || !ANTHROPIC_NAME.test(tool.name)) out.push(`name breaks ${ANTHROPIC_NAME}`);
  if (typeof tool.description !== 'string' || !tool.description) out.push('description missing');
  if (!isNode(tool.input_schema) || tool.input_schema.type !== 'object')
    out.push('input_schema must be an object schema');
  else {
    const problem = jsonSchemaProblem(tool.input_schema);
    if (problem) out.push(`input_schema is not valid JSON Schema: ${problem}`);
  }
  return out;
}

const GEMINI_FUNCTION_NAME = /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/;
const GEMINI_PARAMETER_NAME = /^[a-zA-Z_][a-zA-Z0-9_]{0,63}$/;
/** The fields of the Gemini API's Schema message; any other field is refused. */
const GEMINI_FIELDS = [
  'type',
  'format',
  'title',
  'description',
  'nullable',
  'enum',
  'maxItems',
  'minItems',
  'properties',
  'required',
  'minProperties',
  'maxProperties',
  'minLength',
  'maxLength',
  'pattern',
  'example',
  'anyOf',
  'propertyOrdering',
  'default',
  'items',
  'minimum',
  'maximum',
];
const GEMINI_TYPES = ['STRING', 'NUMBER', 'INTEGER', 'BOOLEAN', 'ARRAY', 'OBJECT', 'NULL'];
const GEMINI_ONLY_ON: Record<string, string[]> = {
  properties: ['OBJECT'],
  required: ['OBJECT'],
  minProperties: ['OBJECT'],
  maxProperties: ['OBJECT'],
  propertyOrdering: ['OBJECT'],
  items: ['ARRAY'],
  minItems: ['ARRAY'],
  maxItems: ['ARRAY'],
  minLength: ['STRING'],
  maxLength: ['STRING'],
  pattern: ['STRING'],
  enum: ['STRING'],
  minimum: ['NUMBER', 'INTEGER'],
  maximum: ['NUMBER', 'INTEGER'],
};
const GEMINI_FORMATS: Record<string, string[]> = {
  STRING: ['enum', 'date-time'],
  NUMBER: ['float', 'double'],
  INTEGER: ['int32', 'int64'],
};

/**
 * Gemini API FunctionDeclaration with its `parameters` Schema, and its answer as `responseJsonSchema` (a JSON Schema
 * value; mutually exclusive with the Schema-message `response`).
 */
export function geminiDeclarationViolations(decl: unknown): string[] {
  if (!isNode(decl)) return ['not an object'];
  const out: string[] = [];
  for (const k of Object.keys(decl))
    if (!['name', 'description', 'parameters', 'responseJsonSchema'].includes(k)) out.push(`unknown field "${k}"`);
  if (decl.responseJsonSchema !== undefined && !isNode(decl.responseJsonSchema))
    out.push('responseJsonSchema must be a JSON Schema object');
  if (typeof decl.name !== 'string' || !GEMINI_FUNCTION_NAME.test(decl.name)) out.push('function name not allowed');
  if (typeof decl.description !== 'string' || !decl.description) out.push('description missing');
  if (decl.parameters === undefined) return out;
  if (!isNode(decl.parameters) || decl.parameters.type !== 'OBJECT') return [...out, 'parameters must be an OBJECT'];
  const walk = (node: unknown, path: string) => {
    if (!isNode(node)) return void out.push(`${path}: not a schema`);
    for (const k of Object.keys(node)) if (!GEMINI_FIELDS.includes(k)) out.push(`${path}: Schema has no field "${k}"`);
    const type = node.type as string;
    if (!GEMINI_TYPES.includes(type)) return void out.push(`${path}: type ${JSON.stringify(type)}`);
    for (const [k, types] of Object.entries(GEMINI_ONLY_ON))
      if (node[k] !== undefined && !types.includes(type)) out.push(`${path}: "${k}" only on ${types.join('/')}`);
    if (node.format !== undefined && !(GEMINI_FORMATS[type] ?? []).includes(asText(node.format)))
      out.push(`${path}: format "${asText(node.format)}" on ${type}`);
    if (node.enum !== undefined && !(Array.isArray(node.enum) && node.enum.every((v) => typeof v === 'string')))
      out.push(`${path}: enum values must be strings`);
    if (type === 'OBJECT') {
      const props = isNode(node.properties) ? node.properties : {};
      if (!Object.keys(props).length) out.push(`${path}: properties should be non-empty for OBJECT type`);
      for (const r of (node.required as string[] | undefined) ?? [])
        if (!(r in props)) out.push(`${path}: required names unknown property ${r}`);
      for (const [n, p] of Object.entries(props)) {
        if (!GEMINI_PARAMETER_NAME.test(n)) out.push(`${path}: parameter name "${n}" not allowed`);
        walk(p, `${path}.${n}`);
      }
    }
    if (type === 'ARRAY') {
      if (node.items === undefined) out.push(`${path}: an ARRAY needs items`);
      else walk(node.items, `${path}[]`);
    }
    if (Array.isArray(node.anyOf)) node.anyOf.forEach((b, i) => walk(b, `${path}.anyOf[${i}]`));
  };
  walk(decl.parameters, '(parameters)');
  return out;
}

/** A Gemini Schema read as the JSON Schema it stands for, to validate a model's arguments against it. */
export function geminiAsJsonSchema(node: Node): Node {
  const out: Node = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === 'type') out.type = (v as string).toLowerCase();
    else if (k === 'properties')
      out.properties = Object.fromEntries(
        Object.entries(v as Node).map(([n, p]) => [n, geminiAsJsonSchema(p as Node)]),
      );
    else if (k === 'items') out.items = geminiAsJsonSchema(v as Node);
    else if (k === 'nullable' || k === 'propertyOrdering' || k === 'example') continue;
    else out[k] = v;
  }
  if (node.nullable === true) out.type = [out.type, 'null'];
  return out;
}

const MCP_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/** MCP Tool (specification 2025-11-25), checked with the official SDK's own schema and the naming rule. */
export function mcpToolViolations(tool: unknown): string[] {
  const out: string[] = [];
  const parsed = ToolSchema.safeParse(tool);
  if (!parsed.success) out.push(`not an MCP Tool: ${parsed.error.message}`);
  if (!isNode(tool)) return out;
  if (typeof tool.name !== 'string' || !MCP_NAME.test(tool.name)) out.push(`name breaks ${MCP_NAME}`);
  if (typeof tool.title !== 'string' || !tool.title) out.push('title missing');
  if (typeof tool.description !== 'string' || !tool.description) out.push('description missing');
  const problem = jsonSchemaProblem(tool.inputSchema);
  if (problem) out.push(`inputSchema is not valid JSON Schema: ${problem}`);
  return out;
}
