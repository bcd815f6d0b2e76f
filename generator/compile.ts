/**
 * Compiles a tool's request templates (YAML) into the TypeScript body of its request builder.
 * The language is described, with an example of every operator, modifier and transform, in docs/templates.md
 * (test/unit/template-docs.test.ts checks that the page covers everything accepted here). In short:
 *
 * One rule for every string in `path`, `query`, `headers`, `body` and `arguments`: a bare string is text, and
 * `{name}` in it is the input parameter `name` (`{name|transform}` transformed; `{$item}`, `{$item.a.b}` the
 * element of `$each` / `for_each`). A string that is one placeholder and nothing else is the value itself
 * (a number stays a number, a list a list; absent when the parameter is absent); placeholders inside longer
 * text are converted to text (the text is absent when one of them is absent).
 *
 * An object with an operator key is an expression, the long form that can carry modifiers:
 *   {$in: name} = '{name}'   {$item: true | "a.b"} = '{$item}' / '{$item.a.b}'   {$template: "a {p}"} (always text)
 *   {$const: value} (a literal, even an object or text with braces)   {$join: [...], $sep}   {$concat: [...]}
 *   {$merge: [...]}   {$uuid_from: [names]}
 * with modifiers, applied in this order: $pipe (transforms), $each (maps an array), $default, $when.
 * Any other scalar, list or mapping is literal structure; an object that holds any input-derived value is
 * dropped when all of them are absent.
 */
import type { Condition, ParamSpec, RequestSpec, ToolSpec } from '../core/spec-model.ts';
import { transformNames } from '../core/transforms.ts';

export interface Compiled {
  code: string;
  /** Depends on the input. */
  dynamic: boolean;
  /** May evaluate to undefined. */
  optional: boolean;
}

export type Fail = (path: Array<string | number>, problem: string) => never;

export const OPERATORS = ['$in', '$item', '$const', '$template', '$join', '$concat', '$merge', '$uuid_from'] as const;
export const MODIFIERS = ['$pipe', '$each', '$default', '$when', '$sep'] as const;
/** The steps of a `$pipe` that take an argument, by name; a named transform (core/transforms.ts) is a bare name. */
const PIPE_STEP_CODE: Record<string, (code: string, arg: unknown) => string> = {
  map: (code, table) => `mapValue(${code}, ${JSON.stringify(table)})`,
  prefix: (code, text) => `(${JSON.stringify(text)} + ${code})`,
  suffix: (code, text) => `(${code} + ${JSON.stringify(text)})`,
};
export const PIPE_STEPS = Object.keys(PIPE_STEP_CODE);
const TRANSFORMS = new Set<string>(transformNames);
const PLACEHOLDER = /\{([^{}]+)\}/g;
const WHOLE_PLACEHOLDER = /^\{([^{}]+)\}$/;

interface Scope {
  params: Record<string, ParamSpec>;
  /** Variable names of enclosing `$each` items, innermost last. */
  items: string[];
  /** The array parameter a request's `for_each` walks, named when one of its items is refused. */
  forEach?: string;
  used: Set<string>;
  fail: Fail;
  /** The connector's own transforms (its hook file's `export const transforms`), called as `CT.name`. */
  transforms?: ReadonlySet<string>;
}

const lit = (v: unknown): Compiled => ({ code: JSON.stringify(v), dynamic: false, optional: false });

function isExpression(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).some((k) => k.startsWith('$'));
}

function paramRef(name: string, scope: Scope, path: Array<string | number>): Compiled {
  const p = scope.params[name];
  if (!p) scope.fail(path, `refers to "${name}", which is not an input parameter of this tool`);
  scope.used.add(name);
  return {
    code: `input[${JSON.stringify(name)}]`,
    dynamic: true,
    optional: !(p.required || p.default !== undefined),
  };
}

function pipeCode(inner: string, steps: unknown, scope: Scope, path: Array<string | number>): string {
  if (!Array.isArray(steps)) scope.fail(path, '$pipe must be a list of transforms');
  let code = inner;
  (steps as unknown[]).forEach((step, i) => {
    if (typeof step === 'string') {
      const own = scope.transforms ?? new Set<string>();
      if (!TRANSFORMS.has(step) && !own.has(step)) {
        scope.fail(
          [...path, i],
          `unknown transform "${step}"; known: ${[...TRANSFORMS, ...own].join(', ')} (a transform of this connector ` +
            'alone goes in its hook file: export const transforms = { ... })',
        );
      }
      code = TRANSFORMS.has(step) ? `T.${step}(${code})` : `CT.${step}(${code})`;
    } else {
      const keys = step && typeof step === 'object' && !Array.isArray(step) ? Object.keys(step) : [];
      if (keys.length !== 1 || !Object.hasOwn(PIPE_STEP_CODE, keys[0]!)) {
        scope.fail([...path, i], `a transform is a name, or one of ${PIPE_STEPS.map((k) => `{${k}: ...}`).join(', ')}`);
      }
      code = PIPE_STEP_CODE[keys[0]!]!(code, (step as Record<string, unknown>)[keys[0]!]);
    }
  });
  return code;
}

/** The value a placeholder names: an input parameter, or `$item` / `$item.a.b` inside `$each` or `for_each`. */
function placeholderValue(name: string, scope: Scope, path: Array<string | number>): Compiled {
  if (name === '$item' || name.startsWith('$item.')) {
    const item = scope.items.at(-1);
    if (!item) scope.fail(path, `{${name}} is only valid inside $each or a request with for_each`);
    if (name === '$item') return { code: item, dynamic: true, optional: false };
    return { code: `H.pick(${item}, ${JSON.stringify(name.slice(6).split('.'))})`, dynamic: true, optional: true };
  }
  if (!scope.params[name]) {
    scope.fail(
      path,
      `refers to "${name}", which is not an input parameter of this tool (for literal braces write {$const: '...'})`,
    );
  }
  return paramRef(name, scope, path);
}

function splitPlaceholder(inner: string): { name: string; pipes: string[] } {
  const [name, ...pipes] = inner.split('|').map((s) => s.trim());
  return { name: name!, pipes };
}

/** `"a {p|t} b"` → parts alternating literal text and value code. */
function interpolate(text: string, scope: Scope, path: Array<string | number>): { parts: string[]; optional: boolean } {
  const parts: string[] = [];
  let optional = false;
  let last = 0;
  const re = new RegExp(PLACEHOLDER);
  for (let m = re.exec(text); m; m = re.exec(text)) {
    parts.push(JSON.stringify(text.slice(last, m.index)));
    const { name, pipes } = splitPlaceholder(m[1]!);
    const ref = placeholderValue(name, scope, path);
    optional ||= ref.optional;
    const piped = pipes.length ? pipeCode('v', pipes, scope, path) : 'v';
    parts.push(pipes.length ? `H.map(${ref.code}, (v) => ${piped})` : ref.code);
    last = m.index + m[0].length;
  }
  parts.push(JSON.stringify(text.slice(last)));
  return { parts, optional };
}

/** Applies `$pipe` steps to a compiled value, leaving an absent value absent. */
function piped(c: Compiled, steps: unknown, scope: Scope, path: Array<string | number>): Compiled {
  return c.optional
    ? { ...c, code: `H.map(${c.code}, (v: any) => ${pipeCode('v', steps, scope, path)})` }
    : { ...c, code: pipeCode(c.code, steps, scope, path) };
}

/** A bare string: text, with `{placeholders}`; one placeholder alone is the value itself. */
function compileString(text: string, scope: Scope, path: Array<string | number>): Compiled {
  const whole = WHOLE_PLACEHOLDER.exec(text);
  if (whole) {
    const { name, pipes } = splitPlaceholder(whole[1]!);
    const value = placeholderValue(name, scope, path);
    return pipes.length ? piped(value, pipes, scope, path) : value;
  }
  if (new RegExp(PLACEHOLDER).test(text)) {
    const { parts } = interpolate(text, scope, path);
    return { code: `H.tpl([${parts.join(', ')}])`, dynamic: true, optional: true };
  }
  if (Object.hasOwn(scope.params, text)) {
    scope.fail(
      path,
      `"${text}" is text, not the input parameter ${text}: a bare string is always literal text. ` +
        `Write '{${text}}' (quoted) for the parameter's value, or {$const: ${text}} if you mean the text`,
    );
  }
  return lit(text);
}

export function conditionCode(
  when: Record<string, Condition>,
  params: Record<string, ParamSpec>,
  fail: Fail,
  path: Array<string | number>,
  used?: Set<string>,
): string {
  const parts = Object.entries(when).map(([name, cond]) => {
    if (!params[name]) fail([...path, name], `"${name}" is not an input parameter of this tool`);
    used?.add(name);
    const ref = `input[${JSON.stringify(name)}]`;
    if (cond === null || typeof cond !== 'object') return `${ref} === ${JSON.stringify(cond)}`;
    if ('equals' in cond) return `${ref} === ${JSON.stringify(cond.equals)}`;
    if ('in' in cond) return `${JSON.stringify(cond.in)}.includes(${ref} as never)`;
    if ('gt' in cond) return `(typeof ${ref} === "number" && ${ref} > ${cond.gt})`;
    return cond.present ? `H.present(${ref})` : `!H.present(${ref})`;
  });
  return parts.join(' && ');
}

function compileExpression(t: Record<string, unknown>, scope: Scope, path: Array<string | number>): Compiled {
  const keys = Object.keys(t);
  for (const k of keys) {
    if (!(OPERATORS as readonly string[]).includes(k) && !(MODIFIERS as readonly string[]).includes(k)) {
      scope.fail(
        [...path, k],
        `unknown template key; operators: ${OPERATORS.join(', ')}; modifiers: ${MODIFIERS.join(', ')}`,
      );
    }
  }
  const ops = keys.filter((k) => (OPERATORS as readonly string[]).includes(k));
  if (ops.length !== 1) scope.fail(path, `an expression needs exactly one of ${OPERATORS.join(', ')}`);
  const op = ops[0]!;
  const arg = t[op];
  let c: Compiled;
  switch (op) {
    case '$in':
      if (typeof arg !== 'string') scope.fail([...path, op], '$in takes a parameter name');
      c = paramRef(arg, scope, [...path, op]);
      break;
    case '$item':
      if (arg !== true && typeof arg !== 'string') scope.fail([...path, op], '$item takes true or a dotted field path');
      c = placeholderValue(arg === true ? '$item' : `$item.${arg}`, scope, [...path, op]);
      break;
    case '$const':
      c = lit(arg);
      break;
    case '$template': {
      if (typeof arg !== 'string') scope.fail([...path, op], '$template takes a string');
      const { parts, optional } = interpolate(arg, scope, [...path, op]);
      c = { code: `H.tpl([${parts.join(', ')}])`, dynamic: true, optional: optional || true };
      break;
    }
    case '$join':
    case '$concat':
    case '$merge': {
      if (!Array.isArray(arg)) scope.fail([...path, op], `${op} takes a list`);
      const items = (arg as unknown[]).map((x, i) => compileTemplate(x, scope, [...path, op, i]));
      const list = `[${items.map((i) => i.code).join(', ')}]`;
      if (op === '$join') {
        const sep = t.$sep ?? ',';
        if (typeof sep !== 'string') scope.fail([...path, '$sep'], '$sep must be a string');
        c = { code: `H.join(${list}, ${JSON.stringify(sep)})`, dynamic: items.some((i) => i.dynamic), optional: true };
      } else if (op === '$concat') {
        c = { code: `H.concat(${list})`, dynamic: items.some((i) => i.dynamic), optional: true };
      } else {
        c = { code: `H.merge(${list})`, dynamic: items.some((i) => i.dynamic), optional: true };
      }
      break;
    }
    case '$uuid_from': {
      if (!Array.isArray(arg)) scope.fail([...path, op], '$uuid_from takes a list of parameter names');
      const refs = (arg as unknown[]).map((n, i) => paramRef(String(n), scope, [...path, op, i]).code);
      c = { code: `H.uuidFrom([${refs.join(', ')}])`, dynamic: true, optional: false };
      break;
    }
    default:
      throw new Error(op);
  }
  if (t.$sep !== undefined && op !== '$join') scope.fail([...path, '$sep'], '$sep only goes with $join');
  if (t.$pipe !== undefined) c = piped(c, t.$pipe, scope, [...path, '$pipe']);
  if (t.$each !== undefined) {
    const itemVar = `item${scope.items.length}`;
    const inner = compileTemplate(t.$each, { ...scope, items: [...scope.items, itemVar] }, [...path, '$each']);
    // Parenthesised: an object template compiles to `{ ... }`, which an arrow function would read as a block.
    c = { code: `H.each(${c.code}, (${itemVar}: any) => (${inner.code}))`, dynamic: true, optional: c.optional };
  }
  if (t.$default !== undefined) {
    c = { code: `(${c.code} ?? ${JSON.stringify(t.$default)})`, dynamic: c.dynamic, optional: false };
  }
  if (t.$when !== undefined) {
    const w = t.$when;
    const when: Record<string, Condition> =
      typeof w === 'string' ? { [w]: { present: true } } : (w as Record<string, Condition>);
    if (!when || typeof when !== 'object') scope.fail([...path, '$when'], '$when takes a parameter name or conditions');
    const cond = conditionCode(when, scope.params, scope.fail, [...path, '$when'], scope.used);
    c = { code: `(${cond} ? ${c.code} : undefined)`, dynamic: true, optional: true };
  }
  return c;
}

/**
 * The root of a body or of the headers: never absent as a whole, so its literal members stay even when
 * every input-derived member is absent (`{userId: {$in: user_id}, status: DONE}` without user_id is
 * `{status: DONE}`, not `{}`).
 */
function compileRoot(t: unknown, scope: Scope, path: Array<string | number>): Compiled {
  if (t === null || typeof t !== 'object' || Array.isArray(t) || isExpression(t))
    return compileTemplate(t, scope, path);
  refuseUnquotedPlaceholder(t as Record<string, unknown>, scope, path);
  const entries = Object.entries(t).map(([k, v]) => [k, compileTemplate(v, scope, [...path, k])] as const);
  const body = entries.map(([k, c]) => `${JSON.stringify(k)}: ${c.code}`).join(', ');
  if (!entries.some(([, c]) => c.optional))
    return { code: `{ ${body} }`, dynamic: entries.some(([, c]) => c.dynamic), optional: false };
  return { code: `H.obj({ ${body} }, [])!`, dynamic: true, optional: false };
}

/**
 * `x: {name}` without quotes is YAML for the mapping `{name: null}`, which would be sent as that object:
 * refused when `name` is something a placeholder could name.
 */
function refuseUnquotedPlaceholder(t: Record<string, unknown>, scope: Scope, path: Array<string | number>): void {
  const keys = Object.keys(t);
  if (keys.length !== 1 || t[keys[0]!] !== null) return;
  const name = splitPlaceholder(keys[0]!).name;
  if (Object.hasOwn(scope.params, name) || name === '$item' || name.startsWith('$item.')) {
    scope.fail(path, `{${keys[0]}} without quotes is a YAML mapping, not a placeholder: write '{${keys[0]}}' (quoted)`);
  }
}

export function compileTemplate(t: unknown, scope: Scope, path: Array<string | number>): Compiled {
  if (typeof t === 'string') return compileString(t, scope, path);
  if (t === null || typeof t !== 'object') return lit(t);
  if (Array.isArray(t)) {
    const items = t.map((x, i) => compileTemplate(x, scope, [...path, i]));
    const dynamic = items.some((i) => i.dynamic);
    if (!items.some((i) => i.optional))
      return { code: `[${items.map((i) => i.code).join(', ')}]`, dynamic, optional: false };
    return { code: `H.arr([${items.map((i) => i.code).join(', ')}], ${dynamic})`, dynamic, optional: dynamic };
  }
  refuseUnquotedPlaceholder(t as Record<string, unknown>, scope, path);
  if (isExpression(t)) return compileExpression(t, scope, path);
  const entries = Object.entries(t).map(([k, v]) => [k, compileTemplate(v, scope, [...path, k])] as const);
  const body = entries.map(([k, c]) => `${JSON.stringify(k)}: ${c.code}`).join(', ');
  const dynamicKeys = entries.filter(([, c]) => c.dynamic).map(([k]) => k);
  if (!entries.some(([, c]) => c.optional))
    return { code: `{ ${body} }`, dynamic: dynamicKeys.length > 0, optional: false };
  if (dynamicKeys.length === 0) return { code: `H.obj({ ${body} }, [])!`, dynamic: false, optional: false };
  return { code: `H.obj({ ${body} }, ${JSON.stringify(dynamicKeys)})`, dynamic: true, optional: true };
}

/** A flat map (query, arguments): each value a template. */
function compileMap(
  map: Record<string, unknown>,
  scope: Scope,
  path: Array<string | number>,
): Array<readonly [string, Compiled]> {
  return Object.entries(map).map(([key, v]) => [key, compileTemplate(v, scope, [...path, key])] as const);
}

function compilePath(pathTemplate: string, scope: Scope, path: Array<string | number>): string {
  let out = '`';
  let last = 0;
  const re = /\{([^{}]+)\}/g;
  for (let m = re.exec(pathTemplate); m; m = re.exec(pathTemplate)) {
    out += pathTemplate.slice(last, m.index).replace(/[`$\\]/g, '\\$&');
    const [name, ...pipes] = m[1]!.split('|').map((s) => s.trim());
    let value: string;
    let field: string | undefined;
    if (name === '$item') {
      field = scope.forEach;
      const item = scope.items.at(-1);
      if (!item) scope.fail(path, '{$item} in a path needs for_each');
      value = item!;
    } else {
      const ref = paramRef(name!, scope, path);
      if (ref.optional) scope.fail(path, `path parameter "${name}" must be a required input parameter`);
      value = ref.code;
      field = name;
    }
    out +=
      '${H.seg(' +
      (pipes.length ? pipeCode(value, pipes, scope, path) : value) +
      (field ? `, ${JSON.stringify(field)}` : '') +
      ')}';
    last = m.index + m[0].length;
  }
  out += pathTemplate.slice(last).replace(/[`$\\]/g, '\\$&') + '`';
  return out;
}

export interface CompileOptions {
  transport: 'rest' | 'mcp';
  hosts: string[];
  /** The connector's own transforms, by name. */
  transforms?: ReadonlySet<string>;
}

/** Compiles all of a tool's requests into statements that push onto `out`. */
export function compileRequests(
  tool: ToolSpec,
  params: Record<string, ParamSpec>,
  fail: Fail,
  opts: CompileOptions,
): { code: string; used: Set<string>; headerParams: Set<string> } {
  const used = new Set<string>();
  const specs: Array<[RequestSpec, Array<string | number>]> = tool.request
    ? [[tool.request, ['request']]]
    : (tool.requests ?? []).map((r, i) => [r, ['requests', i]]);
  if (tool.request && tool.requests) fail(['requests'], 'give either request or requests, not both');
  if (!specs.length && !tool.hook) fail(['request'], 'is required (only a tool with a hook may send nothing)');

  const statements: string[] = [];
  const headerParams = new Set<string>();
  for (const [req, path] of specs) {
    const scope: Scope = { params, items: [], used, fail, transforms: opts.transforms };
    if (req.host !== undefined && !opts.hosts.includes(req.host)) {
      fail([...path, 'host'], `unknown host "${req.host}"; api.hosts has: ${opts.hosts.join(', ') || '(none)'}`);
    }
    let itemScope = scope;
    if (req.for_each !== undefined) {
      const p = params[req.for_each];
      if (!p) fail([...path, 'for_each'], `"${req.for_each}" is not an input parameter`);
      if (p.type !== 'array') fail([...path, 'for_each'], `"${req.for_each}" must be an array parameter`);
      used.add(req.for_each);
      itemScope = { ...scope, items: ['item'], forEach: req.for_each };
    }
    const fields: string[] = [];
    const base = `ctx.base(${req.host ? JSON.stringify(req.host) : ''})`;
    if (req.mcp_tool !== undefined) {
      if (opts.transport !== 'mcp') fail([...path, 'mcp_tool'], 'mcp_tool needs api.transport: mcp');
      if (req.method || req.query || req.body !== undefined) {
        fail(path, 'an MCP request has mcp_tool and arguments only');
      }
      const args = compileMap(req.arguments ?? {}, itemScope, [...path, 'arguments']);
      const argsCode = `H.obj({ ${args.map(([k, c]) => `${JSON.stringify(k)}: ${c.code}`).join(', ')} }, [])!`;
      fields.push(`method: "POST"`, `url: ${base}`, `headers: {}`);
      fields.push(`mcp: { tool: ${JSON.stringify(req.mcp_tool)}, arguments: args }`);
      fields.push(
        `body: { jsonrpc: "2.0", method: "tools/call", params: { name: ${JSON.stringify(req.mcp_tool)}, arguments: args } }`,
      );
      const push = `{ const args = ${argsCode}; out.push({ ${fields.join(', ')} }); }`;
      statements.push(wrapRequest(push, req, params, fail, path, used));
      continue;
    }
    if (opts.transport === 'mcp') fail(path, 'this connector uses the MCP transport: give mcp_tool and arguments');
    if (!req.method) fail([...path, 'method'], 'is required');
    if (!req.path) fail([...path, 'path'], 'is required');
    if (req.arguments) fail([...path, 'arguments'], 'arguments only go with mcp_tool');
    const urlPath = compilePath(req.path, itemScope, [...path, 'path']);
    const query = compileMap(req.query ?? {}, itemScope, [...path, 'query']);
    const queryCode = query.length
      ? `, [${query.map(([k, c]) => `[${JSON.stringify(k)}, ${c.code}]`).join(', ')}]`
      : '';
    fields.push(`method: ${JSON.stringify(req.method)}`, `url: H.url(${base}, ${urlPath}${queryCode})`);
    if (req.headers) {
      const headerScope = { ...itemScope, used: new Set<string>() };
      const h = compileRoot(req.headers, headerScope, [...path, 'headers']);
      for (const name of headerScope.used) {
        used.add(name);
        headerParams.add(name);
      }
      fields.push(`headers: ${h.optional ? `(${h.code} ?? {})` : h.code} as Record<string, string>`);
    } else {
      fields.push('headers: {}');
    }
    if (req.body !== undefined) {
      if (req.method === 'GET' || req.method === 'DELETE')
        fail([...path, 'body'], `${req.method} requests carry no body`);
      const b = compileRoot(req.body, itemScope, [...path, 'body']);
      fields.push(`body: ${b.optional ? `(${b.code} ?? {})` : b.code}`);
      if (req.body_encoding === 'form') fields.push(`bodyEncoding: "form"`);
    }
    if (req.host) fields.push(`host: ${JSON.stringify(req.host)}`);
    if (req.anonymous) fields.push('anonymous: true');
    if (req.apply) {
      if (req.anonymous) fail([...path, 'apply'], 'an anonymous request applies no credentials');
      fields.push(`apply: ${JSON.stringify(req.apply)}`);
    }
    if (req.response?.empty_on) fields.push(`emptyOn: ${JSON.stringify(req.response.empty_on)}`);
    let push = `out.push({ ${fields.join(', ')} });`;
    if (req.for_each !== undefined) {
      push = `for (const item of (input[${JSON.stringify(req.for_each)}] ?? []) as any[]) { ${push} }`;
    }
    statements.push(wrapRequest(push, req, params, fail, path, used));
  }
  return { code: statements.join('\n'), used, headerParams };
}

function wrapRequest(
  statement: string,
  req: RequestSpec,
  params: Record<string, ParamSpec>,
  fail: Fail,
  path: Array<string | number>,
  used: Set<string>,
): string {
  if (!req.when) return statement;
  return `if (${conditionCode(req.when, params, fail, [...path, 'when'], used)}) { ${statement} }`;
}
