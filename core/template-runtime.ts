/**
 * The small runtime the generated request builders call. Kept free of imports from the rest of the
 * runtime so that generated code depends on nothing but this file and `transforms.ts`.
 */
import { createHash } from 'node:crypto';
import { setOwn } from './own.ts';

export { transforms as T, mapValue } from './transforms.ts';

/**
 * An object template. `dynamic` names the keys whose values come from the input: when every one of them
 * is absent the whole object is absent, so `{start: {dateTime, timeZone}}` disappears when neither is given,
 * while a literal-only object such as `{contentType: "text"}` alone does not keep a parent alive.
 */
export function obj(entries: Record<string, unknown>, dynamic: readonly string[]): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  let anyDynamic = dynamic.length === 0;
  for (const key in entries) {
    const value = entries[key];
    if (value === undefined) continue;
    out[key] = value;
    if (!anyDynamic && dynamic.includes(key)) anyDynamic = true;
  }
  return anyDynamic ? out : undefined;
}

export function arr(items: unknown[], dynamic: boolean): unknown[] | undefined {
  const out = items.filter((x) => x !== undefined);
  return dynamic && out.length === 0 ? undefined : out;
}

export function map<T, R>(value: T | undefined, fn: (v: T) => R): R | undefined {
  return value === undefined || value === null ? undefined : fn(value);
}

export function each(value: unknown, fn: (item: unknown, index: number) => unknown): unknown[] | undefined {
  if (value === undefined || value === null) return undefined;
  const list = Array.isArray(value) ? value : [value];
  return list.map(fn).filter((x) => x !== undefined);
}

/** Reads a dotted path from an array element (`$item: a.b`). */
export function pick(item: unknown, path: readonly string[]): unknown {
  let cur: unknown = item;
  for (const seg of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[seg];
  }
  return cur;
}

/** String interpolation: absent when any interpolated value is absent. */
export function tpl(parts: readonly unknown[]): string | undefined {
  let out = '';
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i];
    if (i % 2 === 0) out += p as string;
    else {
      if (p === undefined || p === null) return undefined;
      // eslint-disable-next-line @typescript-eslint/no-base-to-string -- `{name}` in a string is the parameter as text (docs/templates.md); String() is that conversion for any value
      out += String(p);
    }
  }
  return out;
}

export function join(parts: readonly unknown[], sep: string): string | undefined {
  const present = parts.filter((p) => p !== undefined && p !== null && p !== '');
  return present.length ? present.map(String).join(sep) : undefined;
}

export function concat(parts: readonly unknown[]): unknown[] | undefined {
  const present = parts.filter((p) => p !== undefined && p !== null);
  if (!present.length) return undefined;
  return present.flatMap((p) => (Array.isArray(p) ? (p as unknown[]) : [p]));
}

/** Shallow-merges the objects that are present (later ones win); absent when none is, or all are empty. */
export function merge(parts: readonly unknown[]): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  for (const p of parts) {
    if (p && typeof p === 'object' && !Array.isArray(p)) {
      for (const [k, v] of Object.entries(p)) if (v !== undefined) setOwn(out, k, v);
    }
  }
  return Object.keys(out).length ? out : undefined;
}

/** A UUID derived from the given values, so a retried request carries the same id (idempotent upstream). */
export function uuidFrom(values: readonly unknown[]): string {
  const h = createHash('sha256').update(JSON.stringify(values)).digest('hex');
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Given, for rules and `$when`: not absent, not empty text, not an empty list or object. */
export function present(v: unknown): boolean {
  if (v === undefined || v === null || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

// Characters RFC 3986 allows unescaped in a query value, minus the ones that carry meaning in
// application/x-www-form-urlencoded (&, =, +) so every provider parses the value the same way.
const QUERY_SAFE: Record<string, string> = {
  '%24': '$',
  '%27': "'",
  '%28': '(',
  '%29': ')',
  '%2A': '*',
  '%2C': ',',
  '%3A': ':',
  '%40': '@',
  '%2F': '/',
  '%3B': ';',
  '%21': '!',
};

export function encodeQueryPart(s: string): string {
  return encodeURIComponent(s).replace(/%(24|27|28|29|2A|2C|3A|40|2F|3B|21)/g, (m) => QUERY_SAFE[m]!);
}

function queryValue(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/** Builds `base + path + ?query`, skipping absent query values; arrays repeat the key. */
export function url(base: string, path: string, query?: ReadonlyArray<readonly [string, unknown]>): string {
  let out = base + path;
  if (query) {
    let sep = out.includes('?') ? '&' : '?';
    for (const [key, value] of query) {
      if (value === undefined || value === null) continue;
      const values = Array.isArray(value) ? value : [value];
      for (const v of values) {
        out += `${sep}${encodeQueryPart(key)}=${encodeQueryPart(queryValue(v))}`;
        sep = '&';
      }
    }
  }
  return out;
}

/** An input value a request template cannot use where it goes; the executor answers 400 naming the field. */
export class TemplateValueError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A path segment: percent-encoded so an id can never add segments or a query. "." and ".." cannot be
 * encoded away (URL parsers resolve them, and their %2e forms, as dot segments, so `/files/..` would reach
 * another endpoint with the account's credentials), and "" would drop the segment: all three are refused.
 */
export function seg(v: unknown, field = 'input'): string {
  const s = String(v);
  if (s === '' || s === '.' || s === '..') {
    throw new TemplateValueError(
      field,
      s === ''
        ? 'must not be empty (it is a segment of the request path)'
        : `must not be "${s}" (as a segment of the request path it would lead to another endpoint)`,
    );
  }
  return encodeURIComponent(s);
}
