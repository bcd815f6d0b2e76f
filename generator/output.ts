/**
 * Compiles a tool's `output` block (YAML) into its output schema (JSON Schema of the answer, for MCP's
 * `outputSchema`, Gemini's `response`, the docs and the client's types) and the runtime's answer plan (the concise
 * shape, the list an answer budget cuts, the provider's paging). The shape notation is described in
 * docs/tool-output.md: a mapping names fields, a one-item list is a list, a leaf is a type.
 */
import type { OutputLeaf, OutputNode, OutputSpec, ParamSpec, ToolSpec } from '../core/spec-model.ts';
import type { AnswerPaging, AnswerShape, ToolOutput } from '../core/tool-types.ts';
import { CURSOR_MAX_LENGTH, NEXT_CURSOR, RESPONSE_FORMAT, RESPONSE_FORMATS, TRUNCATED } from '../core/answer.ts';
import type { Fail } from './compile.ts';

type Path = Array<string | number>;
type Schema = Record<string, unknown>;

/** What each leaf type is in JSON Schema. Every value may be null: providers send null for what is not set. */
const LEAVES: Record<OutputLeaf, { type?: string; note?: string }> = {
  string: { type: 'string' },
  integer: { type: 'integer' },
  number: { type: 'number' },
  boolean: { type: 'boolean' },
  date: { type: 'string', note: 'A date, YYYY-MM-DD.' },
  'date-time': { type: 'string', note: 'An ISO 8601 date-time, as the provider sent it.' },
  url: { type: 'string', note: 'A URL.' },
  html: {
    type: 'string',
    note: "Plain text: the provider's HTML turned into text, links kept as text [url] (the HTML itself with response_format detailed).",
  },
  object: { type: 'object', note: 'An object, kept whole.' },
  any: {},
};
const LEAF_NAMES = Object.keys(LEAVES);
const ANNOTATIONS = new Set(['$type', '$description', '$enum', '$join', '$selected']);

const isMapping = (n: unknown): n is Record<string, unknown> => !!n && typeof n === 'object' && !Array.isArray(n);

function describe(schema: Schema, ...texts: Array<string | undefined>): Schema {
  const text = texts.filter(Boolean).join(' ');
  return text ? { ...schema, description: text } : schema;
}

function leafSchema(leaf: OutputLeaf, description?: string, values?: unknown[]): Schema {
  const { type, note } = LEAVES[leaf];
  const schema: Schema = type ? { type: [type, 'null'] } : {};
  if (values) schema.enum = [...values, null];
  return describe(schema, description, note);
}

function dotted(path: string): string[] {
  return path.split('.');
}

interface Compiled {
  schema: Schema;
  shape: AnswerShape;
}

function compileNode(node: OutputNode | undefined, path: Path, fail: Fail, root = false): Compiled {
  if (typeof node === 'string') {
    if (!LEAF_NAMES.includes(node)) fail(path, `is not a leaf type; one of: ${LEAF_NAMES.join(', ')}`);
    if (root) fail(path, 'the answer is an object: give its fields as a mapping');
    return { schema: leafSchema(node), shape: node === 'html' ? 'html' : true };
  }
  if (Array.isArray(node)) {
    if (node.length !== 1) fail(path, 'a list is written with exactly one item: the shape of its items');
    if (root) fail(path, 'the answer is an object: a provider that answers a bare list is shaped as `items: [...]`');
    const item = compileNode(node[0], [...path, 0], fail);
    return { schema: { type: ['array', 'null'], items: item.schema }, shape: [item.shape] };
  }
  if (!isMapping(node)) return fail(path, 'must be a leaf type, a one-item list or a mapping of fields');
  if (node.$selected !== undefined) {
    if (Object.keys(node).length !== 1) fail(path, '$selected stands alone: {$selected: <shape>}');
    if (root) fail(path, 'the answer itself cannot be $selected');
    const inner = compileNode(node.$selected as OutputNode, [...path, '$selected'], fail);
    return {
      schema: describe(inner.schema, 'Only when the caller chose the fields (see the selection parameter).'),
      shape: { $selected: inner.shape },
    };
  }
  const description = node.$description;
  if (description !== undefined && typeof description !== 'string') fail([...path, '$description'], 'must be text');
  if (node.$type !== undefined) {
    const leaf = node.$type;
    if (typeof leaf !== 'string' || !LEAF_NAMES.includes(leaf))
      fail([...path, '$type'], `must be a leaf type; one of: ${LEAF_NAMES.join(', ')}`);
    for (const key of Object.keys(node))
      if (!['$type', '$description', '$enum'].includes(key))
        fail([...path, key], 'a leaf ($type) takes only $description and $enum');
    const values = node.$enum;
    if (values !== undefined && (!Array.isArray(values) || !values.length))
      fail([...path, '$enum'], 'must be a list of the values');
    if (root) fail(path, 'the answer is an object: give its fields as a mapping');
    return {
      schema: leafSchema(leaf as OutputLeaf, description, values as unknown[] | undefined),
      shape: leaf === 'html' ? 'html' : true,
    };
  }
  if (node.$join !== undefined) {
    const join = node.$join;
    if (
      !isMapping(join) ||
      typeof join.from !== 'string' ||
      typeof join.at !== 'string' ||
      (join.sep !== undefined && typeof join.sep !== 'string') ||
      Object.keys(join).some((k) => !['from', 'at', 'sep'].includes(k))
    )
      fail([...path, '$join'], 'takes {from: <dotted path>, at: <dotted path>, sep: <text between, optional>}');
    for (const key of Object.keys(node))
      if (key !== '$join' && key !== '$description') fail([...path, key], '$join takes only $description');
    const { from, at, sep } = join as { from: string; at: string; sep?: string };
    return {
      schema: describe(
        { type: ['string', 'null'] },
        description,
        `Text: every ${at} under ${from} of the provider's answer, joined in order.`,
      ),
      shape: { $join: sep ? [dotted(from), dotted(at), sep] : [dotted(from), dotted(at)] },
    };
  }
  const properties: Record<string, Schema> = {};
  const fields: Record<string, AnswerShape> = {};
  for (const [key, child] of Object.entries(node)) {
    if (key.startsWith('$')) {
      if (!ANNOTATIONS.has(key)) fail([...path, key], `is not an annotation; a mapping takes $description`);
      if (key !== '$description') fail([...path, key], `${key} goes on a leaf ({$type: ...}), not on a mapping`);
      continue;
    }
    if (key === TRUNCATED || key === NEXT_CURSOR)
      if (root) fail([...path, key], `is a field the service adds to answers; the provider's answer has none`);
    const compiled = compileNode(child as OutputNode, [...path, key], fail);
    properties[key] = compiled.schema;
    fields[key] = compiled.shape;
  }
  const schema: Schema = root ? { type: 'object', properties } : { type: ['object', 'null'], properties };
  return { schema: describe(schema, description), shape: fields };
}

/** The shape at a dotted path (a list's items, for the `items` check); a number segment is an item of a list. */
function shapeAt(shape: AnswerShape, path: readonly string[]): AnswerShape | undefined {
  let cur: AnswerShape | undefined = shape;
  for (const seg of path) {
    if (Array.isArray(cur) && /^\d+$/.test(seg)) cur = cur[0] as AnswerShape;
    else if (!cur || typeof cur !== 'object' || Array.isArray(cur) || '$join' in cur) return undefined;
    else cur = (cur as Record<string, AnswerShape>)[seg];
  }
  return cur;
}

const TRUNCATED_SCHEMA: Schema = {
  type: 'object',
  description:
    'Present when the answer was cut to fit the answer budget: what was left out, and how to get it (next_cursor).',
  properties: {
    budget_tokens: { type: 'integer', description: 'The answer budget, in tokens.' },
    items_returned: { type: 'integer', description: 'Items of the list in this answer.' },
    items_omitted: { type: 'integer', description: 'Items of this page left out (next_cursor returns them).' },
    fields_cut: {
      type: 'array',
      items: { type: 'string' },
      description: 'Text fields shortened to fit (their paths in the answer).',
    },
    note: { type: 'string' },
  },
};

const NEXT_CURSOR_SCHEMA: Schema = {
  type: 'string',
  description:
    'Present when there is more: call the tool again with next_cursor set to this value (the rest of the input may be repeated or left out).',
};

export interface CompiledOutput {
  schema: Schema;
  output: ToolOutput;
}

function compilePaging(
  spec: OutputSpec,
  params: Record<string, ParamSpec>,
  fail: Fail,
  path: Path,
): AnswerPaging | undefined {
  const p = spec.paging;
  if (!p) return undefined;
  if (!spec.items) fail([...path, 'paging'], 'pages a list: give `items`, the path of the list');
  const kinds = (['skip', 'page', 'token'] as const).filter((k) => p[k] !== undefined);
  if (!kinds.length) fail([...path, 'paging'], 'needs the parameter that selects the page: skip, page or token');
  if (kinds.length > 1 && !(kinds.length === 2 && p.page !== undefined && p.token !== undefined))
    fail([...path, 'paging'], 'takes one of skip, page and token (or page with the token the provider hands out)');
  const kind = kinds[0]!;
  for (const key of [...kinds, 'size'] as const) {
    const name = p[key];
    if (name === undefined) continue;
    const param = params[name];
    if (!param) fail([...path, 'paging', key], `"${name}" is not an input parameter of this tool`);
    const numeric = param.type === 'integer' || param.type === 'number';
    if (key !== 'token' && !numeric) fail([...path, 'paging', key], `"${name}" must be a number parameter`);
    if (key === 'token' && param.type !== 'string')
      fail([...path, 'paging', key], `"${name}" must be a string parameter`);
  }
  if (!p.next && !p.total) fail([...path, 'paging'], 'needs `next` or `total`: where the answer says there is more');
  if (kind === 'token' && !p.next) fail([...path, 'paging', 'next'], "is required with `token`: the next page's token");
  if (kind === 'token' && p.total) fail([...path, 'paging', 'total'], 'goes with `skip` or `page`, not `token`');
  if (kind === 'page' && p.token !== undefined && !p.next)
    fail([...path, 'paging', 'next'], "is required with `token`: the next page's token");
  return {
    kind,
    param: p[kind]!,
    ...(p.size ? { size: p.size } : {}),
    ...(kind === 'page' && p.token ? { token: p.token } : {}),
    ...(p.next ? { next: dotted(p.next) } : {}),
    ...(p.total ? { total: dotted(p.total) } : {}),
  };
}

/** The output schema and answer plan of a tool. */
export function compileOutput(tool: ToolSpec, params: Record<string, ParamSpec>, fail: Fail): CompiledOutput {
  const spec = tool.output;
  const path: Path = ['output'];
  const root = compileNode(spec.shape, [...path, 'shape'], fail, true);
  const items = spec.items ? dotted(spec.items) : undefined;
  if (items) {
    const list = shapeAt(root.shape, items);
    if (!Array.isArray(list)) fail([...path, 'items'], `"${spec.items}" is not a list in the shape`);
  }
  const paging = compilePaging(spec, params, fail, path);
  if (spec.selected_by !== undefined && !params[spec.selected_by])
    fail([...path, 'selected_by'], `"${spec.selected_by}" is not an input parameter of this tool`);
  const properties = { ...(root.schema.properties as Record<string, Schema>) };
  if (items && continues(tool)) properties[NEXT_CURSOR] = NEXT_CURSOR_SCHEMA;
  properties[TRUNCATED] = TRUNCATED_SCHEMA;
  return {
    schema: { ...root.schema, properties },
    output: {
      shape: root.shape,
      ...(items ? { items } : {}),
      ...(paging ? { paging } : {}),
      ...(spec.selected_by ? { selectedBy: spec.selected_by } : {}),
    },
  };
}

/**
 * Whether a list tool's answer continues with `next_cursor`: only a read-only tool's, since going on means calling it
 * again (a tool that runs a job or writes would do that again). A writing tool's list is still cut to the budget.
 */
export function continues(tool: ToolSpec): boolean {
  return tool.annotations.readOnlyHint === true;
}

/** The service's own input parameters of every tool: the answer's format and, for a list tool, its continuation. */
export function answerParams(tool: ToolSpec): Record<string, ParamSpec> {
  return {
    [RESPONSE_FORMAT]: {
      type: 'string',
      enum: [...RESPONSE_FORMATS],
      description:
        "concise (the default): the fields the output schema names, HTML bodies as text. detailed: the provider's own answer, unchanged. Never sent upstream.",
    },
    ...(tool.output?.items && continues(tool)
      ? {
          [NEXT_CURSOR]: {
            type: 'string',
            minLength: 1,
            maxLength: CURSOR_MAX_LENGTH,
            description:
              "The next_cursor of this tool's previous answer: returns the rest of the list. The other parameters may be repeated or left out. Never sent upstream.",
          } satisfies ParamSpec,
        }
      : {}),
  };
}
