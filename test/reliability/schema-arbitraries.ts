/**
 * fast-check arbitraries derived from a tool's JSON Schema (the subset the generator emits: type, enum,
 * pattern, minLength/maxLength, minimum/maximum, multipleOf, items, minItems/maxItems, properties,
 * required, additionalProperties, minProperties), plus the spec's own rules where they shape what a valid
 * input is (unsupported parameters, JSON-in-a-string, comma-separated lists).
 *
 * `toolCase(schema)` yields either a valid input or a mutated one that names the field it broke: wrong types,
 * missing required parameters, extra keys (prototype-pollution names included), out-of-range numbers, too
 * short strings and arrays, values outside an enum, strings that miss their pattern, and broken nesting.
 */
import fc from 'fast-check';
import type { Condition, ParamSpec, ToolSpec } from '../../core/spec-model.ts';

export interface Schema {
  type?: string;
  enum?: unknown[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  multipleOf?: number;
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  minProperties?: number;
}

export interface ToolCase {
  kind: 'valid' | 'invalid';
  input: unknown;
  /** For a mutation: the field it broke (a top-level parameter, a nested path, or `tool_input`). */
  field?: string;
  mutation?: string;
}

/** Strings an attacker tries first: traversal, injection, templates, encodings, bidi, NUL. */
export const HOSTILE_STRINGS = [
  '.',
  '..',
  '../../etc/passwd',
  '..%2f..%2fetc',
  '%2e%2e',
  '/',
  '//evil.example/x',
  'https://evil.example/',
  'a?b=c#d',
  'a&b=c',
  'a\r\nX-Injected: 1',
  'a\nb',
  '\u0000',
  'nul\u0000byte',
  '__proto__',
  'constructor',
  'prototype',
  '{{constructor.constructor}}',
  '${process.exit()}',
  '{access_token}',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '\u202eevil',
  'ﬀ\u0130\u0131',
  'e\u0301',
  '😀👩‍👩‍👧',
  '\ud800',
  ' ',
  '\t',
];

/** Keys tried as extra or free-form object keys: prototype names first. */
export const HOSTILE_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  '__defineGetter__',
  'valueOf',
  '',
];

/** Sets an own, enumerable property the way JSON.parse does, even for `__proto__`. */
export function own(obj: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  return obj;
}

function hugeString(): fc.Arbitrary<string> {
  return fc
    .tuple(fc.integer({ min: 16 * 1024, max: 96 * 1024 }), fc.constantFrom('x', 'é', '😀', '\n', '%'))
    .map(([n, c]) => c.repeat(Math.max(1, Math.floor(n / c.length))));
}

function anyString(min = 0, huge = false): fc.Arbitrary<string> {
  return fc.oneof(
    { arbitrary: fc.string({ minLength: min, maxLength: 40 }), weight: 6 },
    { arbitrary: fc.string({ unit: 'grapheme', minLength: min, maxLength: 30 }), weight: 3 },
    { arbitrary: fc.string({ unit: 'binary', minLength: min, maxLength: 20 }), weight: 2 },
    { arbitrary: fc.constantFrom(...HOSTILE_STRINGS.filter((s) => s.length >= min)), weight: 3 },
    ...(huge ? [{ arbitrary: hugeString(), weight: 1 }] : []),
  );
}

function regexOf(pattern: string): RegExp {
  return new RegExp(pattern, 'u');
}

function stringArb(s: Schema, depth: number): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  const max = s.maxLength;
  const fits = (v: string) => [...v].length >= min && (max === undefined || [...v].length <= max);
  if (s.pattern) {
    const re = regexOf(s.pattern);
    const hostile = HOSTILE_STRINGS.filter((h) => re.test(h) && fits(h));
    const matching = fc.stringMatching(new RegExp(s.pattern)).filter((v) => re.test(v) && fits(v));
    return hostile.length
      ? fc.oneof({ arbitrary: matching, weight: 4 }, { arbitrary: fc.constantFrom(...hostile), weight: 1 })
      : matching;
  }
  // Huge strings only for top-level parameters: a list of 200 of them would be a 40 MB input.
  const base = anyString(min, depth <= 1);
  return max === undefined ? base : base.filter(fits);
}

function numberArb(s: Schema): fc.Arbitrary<number> {
  const whole = s.type === 'integer' || s.multipleOf === 1;
  const min = s.minimum ?? (whole ? -(2 ** 40) : -1e12);
  const max = s.maximum ?? (whole ? Number.MAX_SAFE_INTEGER : 1e12);
  const bounds = [
    s.minimum,
    s.maximum,
    s.minimum !== undefined ? s.minimum + 1 : undefined,
    s.maximum !== undefined ? s.maximum - 1 : undefined,
  ].filter((v): v is number => v !== undefined && v >= min && v <= max);
  const core: fc.Arbitrary<number> = whole
    ? fc.integer({ min: Math.ceil(min), max: Math.floor(max) })
    : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
  const wide =
    whole && s.maximum === undefined ? fc.constantFrom(Number.MAX_SAFE_INTEGER, 2 ** 31, 0) : fc.constant(min);
  const arb = fc.oneof(
    { arbitrary: core, weight: 6 },
    ...(bounds.length ? [{ arbitrary: fc.constantFrom(...bounds), weight: 3 }] : []),
    { arbitrary: wide, weight: 1 },
  );
  return arb.map((n) => (Object.is(n, -0) ? 0 : n));
}

export interface SpecHints {
  /** Parameters a rule refuses whenever given. */
  unsupported: Set<string>;
  /** Parameters holding JSON text of these types. */
  json: Map<string, Array<'array' | 'object'>>;
  /** Comma-separated parameters and their item pattern. */
  csv: Map<string, { item_pattern?: string; max_items?: number }>;
  /** Groups of which one parameter must be given. */
  atLeastOne: string[][];
  /** Parameters required when a condition on others holds. */
  requires: Array<{ requires: string[]; when: Record<string, Condition> }>;
  /** Every parameter a cross-field rule or parameter check may name. */
  ruleFields: Set<string>;
  /** Parameters placed as segments of a request path. */
  pathParams: Set<string>;
  /** Parameters placed in a request header. */
  headerParams: Set<string>;
}

export function hintsOf(tool: ToolSpec | undefined): SpecHints {
  const hints: SpecHints = {
    unsupported: new Set(),
    json: new Map(),
    csv: new Map(),
    atLeastOne: [],
    requires: [],
    ruleFields: new Set(),
    pathParams: new Set(),
    headerParams: new Set(),
  };
  if (!tool) return hints;
  for (const r of tool.request ? [tool.request] : (tool.requests ?? [])) {
    for (const m of (r.path ?? '').matchAll(/\{([^{}|]+)/g)) hints.pathParams.add(m[1]!.trim());
    const headers = JSON.stringify(r.headers ?? {});
    for (const m of headers.matchAll(/"\$in":"([^"]+)"|\{([a-z_][a-z0-9_]*)\}/gi))
      hints.headerParams.add(m[1] ?? m[2]!);
  }
  for (const [name, p] of Object.entries(tool.input as Record<string, ParamSpec>)) {
    if (p.json) {
      hints.json.set(name, p.json.types);
      hints.ruleFields.add(name);
    }
    if (p.csv) {
      hints.csv.set(name, p.csv);
      hints.ruleFields.add(name);
    }
  }
  for (const r of tool.rules ?? []) {
    if ('unsupported' in r) r.unsupported.forEach((f) => (hints.unsupported.add(f), hints.ruleFields.add(f)));
    if ('at_least_one_of' in r) {
      hints.atLeastOne.push(r.at_least_one_of);
      r.at_least_one_of.forEach((f) => hints.ruleFields.add(f));
    }
    if ('requires' in r) {
      hints.requires.push({ requires: r.requires, when: r.when });
      r.requires.forEach((f) => hints.ruleFields.add(f));
    }
    if ('max_page' in r) hints.ruleFields.add(r.max_page.page);
  }
  // A list tool's next_cursor is a value the service issued: any other text the schema admits is refused, naming it.
  if (tool.output.items && tool.annotations.readOnlyHint) hints.ruleFields.add('next_cursor');
  return hints;
}

/** A valid value for a schema (top-level hints apply to the tool's own parameters only). */
export function validValue(s: Schema, depth = 0): fc.Arbitrary<unknown> {
  if (s.enum) return fc.constantFrom(...s.enum);
  switch (s.type) {
    case 'string':
      return stringArb(s, depth);
    case 'integer':
    case 'number':
      return numberArb(s);
    case 'boolean':
      return fc.boolean();
    case 'array': {
      const min = s.minItems ?? 0;
      const max = Math.max(min, Math.min(s.maxItems ?? 4, min + 4));
      return fc.array(s.items ? validValue(s.items, depth + 1) : freeValue(depth + 1), {
        minLength: min,
        maxLength: max,
      });
    }
    case 'object':
      return objectArb(s, depth, undefined);
    default:
      return freeValue(depth + 1);
  }
}

/** Any JSON value, with hostile keys and strings, for free-form properties. */
export function freeValue(depth: number): fc.Arbitrary<unknown> {
  const leaf = fc.oneof(
    anyString(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => (Object.is(n, -0) ? 0 : n)),
    fc.boolean(),
    fc.constant(null),
  );
  if (depth > 3) return leaf;
  return fc.oneof(
    { arbitrary: leaf, weight: 5 },
    {
      arbitrary: fc.array(
        fc.constant(null).chain(() => freeValue(depth + 1)),
        { maxLength: 3 },
      ),
      weight: 1,
    },
    { arbitrary: freeObject(depth + 1), weight: 1 },
  );
}

function freeKey(): fc.Arbitrary<string> {
  return fc.oneof(
    { arbitrary: fc.constantFrom(...HOSTILE_KEYS), weight: 1 },
    { arbitrary: fc.string({ minLength: 1, maxLength: 12 }), weight: 3 },
  );
}

function freeObject(depth: number): fc.Arbitrary<Record<string, unknown>> {
  return fc
    .array(
      fc.tuple(
        freeKey(),
        fc.constant(null).chain(() => freeValue(depth + 1)),
      ),
      { maxLength: 4 },
    )
    .map((entries) => {
      const o: Record<string, unknown> = {};
      for (const [k, v] of entries) own(o, k, v);
      return o;
    });
}

/** "Given", as the rules mean it: not absent, not empty text, not an empty list or object. */
function given(v: unknown): boolean {
  if (v === undefined || v === null || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

function holds(c: Condition, v: unknown): boolean {
  if (c === null || typeof c !== 'object') return v === c;
  if ('equals' in c) return v === c.equals;
  if ('in' in c) return c.in.includes(v as never);
  if ('gt' in c) return typeof v === 'number' && v > c.gt;
  return given(v) === c.present;
}

function csvArb(c: { item_pattern?: string; max_items?: number }): fc.Arbitrary<string> {
  const item = c.item_pattern
    ? fc.stringMatching(new RegExp(c.item_pattern)).filter((v) => !v.includes(',') && v.trim() === v && v !== '')
    : fc.stringMatching(/^[a-z_][a-z0-9_]{0,15}$/);
  return fc.array(item, { minLength: 1, maxLength: Math.min(c.max_items ?? 5, 5) }).map((xs) => xs.join(','));
}

function jsonTextArb(types: Array<'array' | 'object'>): fc.Arbitrary<string> {
  return fc
    .constantFrom(...types)
    .chain((t) =>
      (t === 'array' ? fc.array(freeValue(2), { maxLength: 3 }) : freeObject(2)).map((v) => JSON.stringify(v)),
    );
}

function objectArb(s: Schema, depth: number, hints: SpecHints | undefined): fc.Arbitrary<Record<string, unknown>> {
  const props = s.properties ?? {};
  const required = new Set(s.required ?? []);
  const names = Object.keys(props).filter((n) => !hints?.unsupported.has(n) || required.has(n));
  const entryArbs = names.map((name) => {
    let v: fc.Arbitrary<unknown> = validValue(props[name]!, depth + 1);
    if (hints?.json.has(name)) v = jsonTextArb(hints.json.get(name)!);
    else if (hints?.csv.has(name) && props[name]!.type === 'string' && !props[name]!.pattern)
      v = csvArb(hints.csv.get(name)!);
    return { name, v };
  });
  return fc
    .tuple(
      fc.tuple(
        ...entryArbs.map(({ name, v }) =>
          required.has(name) ? v.map((x) => ({ present: true, x })) : fc.record({ present: fc.boolean(), x: v }),
        ),
      ),
      hints?.atLeastOne.length
        ? fc.tuple(...hints.atLeastOne.map((group) => fc.constantFrom(...group)))
        : fc.constant([] as string[]),
      s.additionalProperties === false || depth === 0
        ? fc.constant([] as Array<[string, unknown]>)
        : fc.array(fc.tuple(freeKey(), freeValue(depth + 1)), { maxLength: 3 }),
    )
    .map(([values, oneOfEach, extra]) => {
      const o: Record<string, unknown> = {};
      entryArbs.forEach(({ name }, i) => {
        const e = values[i]!;
        if (e.present || oneOfEach.includes(name)) own(o, name, e.x);
      });
      // Give what a rule requires once its condition holds (a few rounds: one addition may trigger another rule).
      for (let round = 0; round < 4 && hints?.requires.length; round++) {
        let changed = false;
        for (const r of hints.requires) {
          if (!Object.entries(r.when).every(([k, c]) => holds(c, o[k]))) continue;
          for (const f of r.requires) {
            const i = entryArbs.findIndex((e) => e.name === f);
            if (i >= 0 && !given(o[f]) && given(values[i]!.x)) {
              own(o, f, values[i]!.x);
              changed = true;
            }
          }
        }
        if (!changed) break;
      }
      for (const [k, v] of extra) if (!(k in props)) own(o, k, v);
      return o;
    })
    .filter((o) => Object.keys(o).length >= (s.minProperties ?? 0));
}

const TYPE_SAMPLES: Record<string, fc.Arbitrary<unknown>> = {
  string: fc.string({ maxLength: 8 }),
  number: fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => (Object.is(n, -0) ? 0 : n)),
  boolean: fc.boolean(),
  null: fc.constant(null),
  array: fc.array(fc.integer(), { maxLength: 2 }),
  object: fc.constant({}),
};

/** A value whose JSON type the schema does not allow. */
function wrongType(s: Schema): fc.Arbitrary<unknown> {
  const kinds = Object.keys(TYPE_SAMPLES).filter((k) => k !== s.type);
  // For an integer, a fractional number is the wrong type.
  return fc
    .constantFrom(...kinds)
    .chain((k) => (k === 'number' && s.type === 'integer' ? fc.constantFrom(0.5, -1.25) : TYPE_SAMPLES[k]!));
}

/** Values that break a constraint other than the type, when the schema has one. */
function outOfRange(s: Schema): fc.Arbitrary<unknown> | undefined {
  const options: Array<fc.Arbitrary<unknown>> = [];
  if (s.enum) {
    const set = new Set(s.enum.map((v) => JSON.stringify(v)));
    options.push(
      fc
        .oneof(fc.string({ maxLength: 12 }), fc.constantFrom(...HOSTILE_STRINGS))
        .filter((v) => !set.has(JSON.stringify(v)) && typeof v === typeof s.enum![0]),
    );
  }
  if (s.type === 'number' || s.type === 'integer') {
    if (s.minimum !== undefined) options.push(fc.constantFrom(s.minimum - 1, s.minimum - 1e9, -Number.MAX_VALUE));
    if (s.maximum !== undefined) options.push(fc.constantFrom(s.maximum + 1, s.maximum * 10 + 1, Number.MAX_VALUE));
    if (s.multipleOf === 1 || s.type === 'integer') options.push(fc.constantFrom(1.5, 0.1, (s.minimum ?? 0) + 0.5));
  }
  if (s.type === 'string' && !s.enum) {
    if (s.minLength) options.push(fc.string({ maxLength: s.minLength - 1 }));
    if (s.maxLength !== undefined) options.push(fc.string({ minLength: s.maxLength + 1, maxLength: s.maxLength + 20 }));
    if (s.pattern) {
      const re = regexOf(s.pattern);
      options.push(fc.oneof(anyString(), fc.constantFrom(...HOSTILE_STRINGS)).filter((v) => !re.test(v)));
    }
  }
  if (s.type === 'array') {
    if (s.minItems) options.push(fc.constant([]));
    if (s.maxItems !== undefined && s.items)
      options.push(fc.array(validValue(s.items, 2), { minLength: s.maxItems + 1, maxLength: s.maxItems + 3 }));
  }
  return options.length ? fc.oneof(...options) : undefined;
}

/** A mutation inside a nested value (array item or object property), with the path it broke. */
function nestedBreak(s: Schema): fc.Arbitrary<{ value: unknown; path: string }> | undefined {
  if (s.type === 'array' && s.items && (s.items.type ?? 'any') !== 'any') {
    const min = Math.max(1, s.minItems ?? 0);
    return fc
      .tuple(fc.array(validValue(s.items, 2), { minLength: min, maxLength: min + 2 }), wrongType(s.items), fc.nat())
      .map(([items, bad, i]) => {
        const at = i % items.length;
        items[at] = bad;
        return { value: items, path: `[${at}]` };
      });
  }
  if (s.type === 'object' && s.properties && Object.keys(s.properties).length) {
    const names = Object.keys(s.properties);
    return fc
      .tuple(objectArb(s, 1, undefined), fc.constantFrom(...names))
      .chain(([o, name]) =>
        wrongType(s.properties![name]!).map((bad) => ({ value: own({ ...o }, name, bad), path: `.${name}` })),
      );
  }
  return undefined;
}

/** Valid and invalid inputs for a tool, about one in three valid. */
export function toolCase(schema: Schema, hints: SpecHints): fc.Arbitrary<ToolCase> {
  const valid = objectArb(schema, 0, hints);
  const props = schema.properties ?? {};
  const names = Object.keys(props);
  const mutations: Array<fc.Arbitrary<ToolCase>> = [];
  const withBase = (f: (base: Record<string, unknown>) => fc.Arbitrary<ToolCase>) => valid.chain(f);

  if (names.length) {
    mutations.push(
      withBase((base) =>
        fc.constantFrom(...names).chain((name) =>
          wrongType(props[name]!).map((bad) => ({
            kind: 'invalid' as const,
            input: own({ ...base }, name, bad),
            field: name,
            mutation: 'wrong type',
          })),
        ),
      ),
    );
  }
  const required = schema.required ?? [];
  if (required.length) {
    mutations.push(
      withBase((base) =>
        fc.constantFrom(...required).map((name) => {
          const input = { ...base };
          delete input[name];
          return { kind: 'invalid' as const, input, field: name, mutation: 'missing required' };
        }),
      ),
    );
  }
  if (schema.additionalProperties === false) {
    const nearMisses = names.flatMap((n) => [`${n}_x`, n.toUpperCase(), ` ${n}`]);
    const key = fc
      .oneof(
        fc.constantFrom(...HOSTILE_KEYS.filter((k) => k !== '')),
        fc.string({ minLength: 1, maxLength: 16 }),
        ...(nearMisses.length ? [fc.constantFrom(...nearMisses)] : []),
      )
      .filter((k) => !(k in props) && !Object.prototype.hasOwnProperty.call(props, k));
    mutations.push(
      withBase((base) =>
        fc.tuple(key, freeValue(1)).map(([k, v]) => ({
          kind: 'invalid' as const,
          input: own({ ...base }, k, v),
          field: k,
          mutation: 'extra key',
        })),
      ),
    );
  }
  const ranged = names
    .map((n) => [n, outOfRange(props[n]!)] as const)
    .filter((x): x is readonly [string, fc.Arbitrary<unknown>] => x[1] !== undefined);
  if (ranged.length) {
    mutations.push(
      withBase((base) =>
        fc.constantFrom(...ranged).chain(([name, arb]) =>
          arb.map((bad) => ({
            kind: 'invalid' as const,
            input: own({ ...base }, name, bad),
            field: name,
            mutation: 'out of range',
          })),
        ),
      ),
    );
  }
  const nested = names
    .map((n) => [n, nestedBreak(props[n]!)] as const)
    .filter((x): x is readonly [string, fc.Arbitrary<{ value: unknown; path: string }>] => x[1] !== undefined);
  if (nested.length) {
    mutations.push(
      withBase((base) =>
        fc.constantFrom(...nested).chain(([name, arb]) =>
          arb.map(({ value, path }) => ({
            kind: 'invalid' as const,
            input: own({ ...base }, name, value),
            field: `${name}${path}`,
            mutation: 'nested',
          })),
        ),
      ),
    );
  }
  mutations.push(
    fc
      .oneof(
        fc.constant(null),
        fc.array(fc.integer(), { maxLength: 2 }),
        fc.string({ maxLength: 5 }),
        fc.integer(),
        fc.boolean(),
      )
      .map((input) => ({ kind: 'invalid' as const, input, field: 'tool_input', mutation: 'not an object' })),
  );
  return fc.oneof(
    { arbitrary: valid.map((input) => ({ kind: 'valid' as const, input })), weight: 3 },
    { arbitrary: fc.oneof(...mutations), weight: 5 },
  );
}

const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/**
 * The parameters an input breaks under the service's own rules for every tool, which no schema states: text
 * must be well-formed Unicode, a path segment must not be "", "." or "..", a header value must be printable
 * ASCII. Returns the top-level parameters concerned.
 */
export function serviceRuleViolations(input: unknown, hints: SpecHints): string[] {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return [];
  const out = new Set<string>();
  const hasLoneSurrogate = (v: unknown): boolean => {
    if (typeof v === 'string') return LONE_SURROGATE.test(v);
    if (v && typeof v === 'object')
      return Object.entries(v).some(([k, x]) => LONE_SURROGATE.test(k) || hasLoneSurrogate(x));
    return false;
  };
  for (const [k, v] of Object.entries(input)) {
    if (hasLoneSurrogate(v) || LONE_SURROGATE.test(k)) out.add(k);
    if (hints.pathParams.has(k) && (v === '' || v === '.' || v === '..')) out.add(k);
    if (hints.headerParams.has(k) && typeof v === 'string' && !/^[\t\x20-\x7e]*$/.test(v)) out.add(k);
  }
  return [...out];
}
