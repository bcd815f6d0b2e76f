/**
 * The OData system query options the fake Microsoft Graph understands on its collections: `$filter` (a
 * subset: comparisons, `and`/`or`, parentheses, startswith/endswith/contains, `any` lambdas), `$orderby`,
 * `$select`, `$skip`, `$top` (1-1000 on messages), `$count`, and `$search` on messages (KQL-ish, value in double quotes).
 * Anything outside that subset is refused with 400, so a request the fake does not understand never passes
 * silently. Query parameters without `$` are refused too: the provider doc says to always send the `$`.
 */
import { GraphError, type Json } from './graph-shapes.ts';
import { asText } from '../helpers/text.ts';

const badRequest = (message: string) => new GraphError(400, 'BadRequest', message);

export type Query = Record<string, string>;

/** Reads the query string; a repeated option is an error, as in Graph. */
export function parseQuery(rawUrl: string): Query {
  const params = new URL(rawUrl, 'http://fake.invalid').searchParams;
  const out: Query = {};
  for (const [key, value] of params) {
    if (key in out)
      throw badRequest(`Query option '${key}' was specified more than once, but it must be specified at most once.`);
    out[key] = value;
  }
  return out;
}

/** Refuses options a route does not support, and bare names such as `top` that lack the `$`. */
export function checkOptions(query: Query, allowed: readonly string[]): void {
  for (const key of Object.keys(query)) {
    if (allowed.includes(key)) continue;
    if (!key.startsWith('$') && allowed.includes(`$${key}`)) {
      throw badRequest(`Query parameter '${key}' is not supported here; send the system query option '$${key}'.`);
    }
    throw badRequest(
      `Query option '${key}' is not allowed on this resource. Allowed: ${allowed.join(', ') || 'none'}.`,
    );
  }
}

// ------------------------------------------------------------------------------------------------------------
// Values and comparison
// ------------------------------------------------------------------------------------------------------------

export function pick(item: unknown, path: string): unknown {
  let cur = item;
  for (const seg of path.split('/')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Json)[seg];
  }
  return cur;
}

const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$/;

/** An ISO date-time as an instant; a value without zone is UTC, as Graph stores it. */
function instant(s: string): number {
  const m = /^(.*?T\d{2}:\d{2}(?::\d{2})?)(\.\d+)?(Z|[+-]\d{2}:\d{2})?$/.exec(s);
  if (!m) return Date.parse(`${s}T00:00:00Z`);
  return Date.parse(`${m[1]}${m[2] ? m[2].slice(0, 4) : ''}${m[3] ?? 'Z'}`);
}

function compare(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === undefined || a === null) return -1;
  if (b === undefined || b === null) return 1;
  if (typeof a === 'string' && typeof b === 'string' && ISO.test(a) && ISO.test(b))
    return Math.sign(instant(a) - instant(b));
  if (typeof a === 'number' && typeof b === 'number') return Math.sign(a - b);
  if (typeof a === 'boolean' && typeof b === 'boolean') return a === b ? 0 : a ? 1 : -1;
  return asText(a).toLowerCase() < asText(b).toLowerCase()
    ? -1
    : asText(a).toLowerCase() > asText(b).toLowerCase()
      ? 1
      : 0;
}

// ------------------------------------------------------------------------------------------------------------
// $filter
// ------------------------------------------------------------------------------------------------------------

type Predicate = (item: unknown) => boolean;

interface Parsed {
  test: Predicate;
  /** Property paths in the order the filter names them (for Graph's InefficientFilter rule). */
  paths: string[];
}

function unsupported(filter: string): GraphError {
  return badRequest(`Invalid filter clause: the fake provider does not understand '${filter}'.`);
}

/** Splits on a keyword outside quotes and parentheses. */
function splitTop(s: string, word: 'and' | 'or'): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  const token = ` ${word} `;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if (ch === "'") quoted = !quoted;
    else if (!quoted && ch === '(') depth++;
    else if (!quoted && ch === ')') depth--;
    else if (!quoted && depth === 0 && s.slice(i, i + token.length).toLowerCase() === token) {
      parts.push(s.slice(start, i));
      start = i + token.length;
      i += token.length - 1;
    }
  }
  parts.push(s.slice(start));
  return parts.map((p) => p.trim());
}

function literal(raw: string, filter: string): unknown {
  const s = raw.trim();
  if (/^'.*'$/s.test(s)) return s.slice(1, -1).replace(/''/g, "'");
  if (s === 'true' || s === 'false') return s === 'true';
  if (s === 'null') return null;
  if (/^-?\d+(\.\d+)?$/.test(s)) return Number(s);
  if (ISO.test(s)) return s;
  throw unsupported(filter);
}

const OPS: Record<string, (c: number) => boolean> = {
  eq: (c) => c === 0,
  ne: (c) => c !== 0,
  gt: (c) => c > 0,
  ge: (c) => c >= 0,
  lt: (c) => c < 0,
  le: (c) => c <= 0,
};
const PATH = '[A-Za-z_][\\w]*(?:/[A-Za-z_][\\w]*)*';

function clause(s: string, filter: string): Parsed {
  const text = s.trim();
  const ors = splitTop(text, 'or');
  if (ors.length > 1) {
    const parts = ors.map((p) => clause(p, filter));
    return { test: (x) => parts.some((p) => p.test(x)), paths: parts.flatMap((p) => p.paths) };
  }
  const ands = splitTop(text, 'and');
  if (ands.length > 1) {
    const parts = ands.map((p) => clause(p, filter));
    return { test: (x) => parts.every((p) => p.test(x)), paths: parts.flatMap((p) => p.paths) };
  }
  if (text.startsWith('(') && text.endsWith(')')) return clause(text.slice(1, -1), filter);
  if (/^not\s+/i.test(text)) {
    const inner = clause(text.replace(/^not\s+/i, ''), filter);
    return { test: (x) => !inner.test(x), paths: inner.paths };
  }
  let m = new RegExp(`^(startswith|endswith|contains)\\((${PATH}),\\s*('(?:[^']|'')*')\\)$`, 'i').exec(text);
  if (m) {
    const fn = m[1]!.toLowerCase();
    const path = m[2]!;
    const want = String(literal(m[3]!, filter)).toLowerCase();
    return {
      test: (x) => {
        const v = pick(x, path);
        if (typeof v !== 'string') return false;
        const have = v.toLowerCase();
        return fn === 'startswith'
          ? have.startsWith(want)
          : fn === 'endswith'
            ? have.endsWith(want)
            : have.includes(want);
      },
      paths: [path],
    };
  }
  m = new RegExp(`^(${PATH})/any\\((\\w+):\\s*(.+)\\)$`).exec(text);
  if (m) {
    const path = m[1]!;
    const variable = m[2]!;
    const inner = clause(
      m[3]!.replace(new RegExp(`\\b${variable}/`, 'g'), '').replace(new RegExp(`^${variable}\\b`), '$it'),
      filter,
    );
    return {
      test: (x) => {
        const list = pick(x, path);
        return Array.isArray(list) && list.some((el) => inner.test(typeof el === 'object' ? el : { $it: el }));
      },
      paths: [path],
    };
  }
  m = new RegExp(`^(${PATH}|\\$it)\\s+(eq|ne|gt|ge|lt|le)\\s+(.+)$`, 'i').exec(text);
  if (m) {
    const path = m[1]!;
    const op = OPS[m[2]!.toLowerCase()]!;
    const want = literal(m[3]!, filter);
    return { test: (x) => op(compare(pick(x, path), want)), paths: path === '$it' ? [] : [path] };
  }
  throw unsupported(filter);
}

export function parseFilter(filter: string): Parsed {
  if (!filter.trim()) throw badRequest('The $filter expression must not be empty.');
  return clause(filter, filter);
}

// ------------------------------------------------------------------------------------------------------------
// $orderby, $select, $search
// ------------------------------------------------------------------------------------------------------------

export function parseOrderBy(orderby: string): Array<{ path: string; desc: boolean }> {
  return orderby.split(',').map((part) => {
    const m = new RegExp(`^\\s*(${PATH})(?:\\s+(asc|desc))?\\s*$`, 'i').exec(part);
    if (!m) throw badRequest(`Invalid $orderby expression '${orderby}'.`);
    return { path: m[1]!, desc: m[2]?.toLowerCase() === 'desc' };
  });
}

export function sortBy(items: Json[], keys: Array<{ path: string; desc: boolean }>): Json[] {
  return [...items].sort((a, b) => {
    for (const k of keys) {
      const c = compare(pick(a, k.path), pick(b, k.path));
      if (c) return k.desc ? -c : c;
    }
    return 0;
  });
}

export function select(item: Json, fields: string[] | undefined): Json {
  if (!fields) return item;
  const out: Json = {};
  for (const key of Object.keys(item)) {
    if (key === 'id' || key.startsWith('@odata.') || fields.includes(key)) out[key] = item[key];
  }
  return out;
}

export function parseSelect(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const fields = value.split(',').map((f) => f.trim());
  if (fields.some((f) => !/^[A-Za-z][\w]*$/.test(f))) throw badRequest(`Invalid $select expression '${value}'.`);
  return fields;
}

function address(r: unknown): string {
  const e = (r as { emailAddress?: { address?: string; name?: string } })?.emailAddress;
  return `${e?.address ?? ''} ${e?.name ?? ''}`.toLowerCase();
}

/**
 * A message `$search`. The value must be wrapped in double quotes. Terms are ANDed; `from:`, `to:`, `cc:`,
 * `bcc:`, `participants:`, `subject:`, `body:` and `attachment:` look at one property; a bare term looks at
 * the sender, subject and body only (not the recipients), as Graph's default search does.
 */
export function parseSearch(value: string): (message: Json, attachmentNames: string[]) => boolean {
  if (value.length < 2 || !value.startsWith('"') || !value.endsWith('"')) {
    throw badRequest(
      `Syntax error: character '${value[0] ?? ''}' is not valid at position 0 in '${value}'. The $search value must be enclosed in double quotes.`,
    );
  }
  const inner = value.slice(1, -1).replace(/\\"/g, '"');
  const terms = (inner.match(/[A-Za-z]+:"[^"]*"|"[^"]*"|\S+/g) ?? []).filter((t) => !/^(AND|OR)$/.test(t));
  const checks = terms.map((term) => {
    const m = /^([A-Za-z]+):(.*)$/.exec(term);
    const prop = m?.[1]?.toLowerCase();
    const want = (m && prop !== undefined ? m[2]! : term).replace(/^"|"$/g, '').toLowerCase();
    return (msg: Json, attachments: string[]): boolean => {
      const from = address(msg.from);
      const list = (k: string) => ((msg[k] as unknown[]) ?? []).map(address).join(' ');
      const subject = asText(msg.subject ?? '').toLowerCase();
      const body = asText((msg.body as Json | undefined)?.content ?? '').toLowerCase();
      switch (prop) {
        case 'from':
          return from.includes(want);
        case 'to':
        case 'cc':
        case 'bcc':
          return list(`${prop}Recipients`).includes(want);
        case 'participants':
          return [from, list('toRecipients'), list('ccRecipients'), list('bccRecipients')].join(' ').includes(want);
        case 'subject':
          return subject.includes(want);
        case 'body':
          return body.includes(want);
        case 'attachment':
          return attachments.some((n) => n.toLowerCase().includes(want));
        default:
          return from.includes(want) || subject.includes(want) || body.includes(want);
      }
    };
  });
  return (msg, attachments) => checks.every((c) => c(msg, attachments));
}

// ------------------------------------------------------------------------------------------------------------
// Paging
// ------------------------------------------------------------------------------------------------------------

function integerOption(query: Query, key: string, min: number, max: number): number | undefined {
  const raw = query[key];
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) throw badRequest(`Invalid value '${raw}' for query option '${key}': an integer is expected.`);
  const n = Number(raw);
  if (n < min || n > max) {
    throw new GraphError(
      400,
      'ErrorInvalidProperty',
      `The value of '${key}' must be between ${min} and ${max}, got ${n}.`,
    );
  }
  return n;
}

/** Encodes a query value the way Graph writes its own next links. */
const encode = (s: string) => encodeURIComponent(s).replace(/%(24|27|28|29|2C|3A|2F)/g, (m) => decodeURIComponent(m));

/**
 * Applies $filter, $orderby (or the default order), $skip, $top and $select, and builds the collection
 * envelope with `@odata.nextLink` (an absolute URL carrying `$skip`) when more items remain.
 */
export function page(
  all: Json[],
  query: Query,
  opts: {
    context: string;
    selfUrl: string;
    defaultOrder?: Array<{ path: string; desc: boolean }>;
    /** Graph's rule for messages: $filter must name the $orderby properties first (else InefficientFilter). */
    strictOrderBy?: boolean;
    /** The largest $top the collection allows (1000 for messages). */
    maxTop?: number;
  },
): Json {
  let items = all;
  const filter = query.$filter !== undefined ? parseFilter(query.$filter) : undefined;
  if (filter) items = items.filter(filter.test);
  const order = query.$orderby !== undefined ? parseOrderBy(query.$orderby) : undefined;
  if (order && filter && opts.strictOrderBy) {
    // Graph (messages): the $orderby properties must come first in the $filter, in the same order.
    const first = filter.paths.slice(0, order.length);
    if (order.some((o, i) => o.path !== first[i])) {
      throw new GraphError(
        400,
        'InefficientFilter',
        'The restriction or sort order is too complex for this operation.',
      );
    }
  }
  if (order ?? opts.defaultOrder) items = sortBy(items, (order ?? opts.defaultOrder)!);
  const skip = integerOption(query, '$skip', 0, Number.MAX_SAFE_INTEGER) ?? 0;
  const top = integerOption(query, '$top', 1, opts.maxTop ?? Number.MAX_SAFE_INTEGER) ?? 10;
  const fields = parseSelect(query.$select);
  const value = items.slice(skip, skip + top).map((i) => select(i, fields));
  const envelope: Json = { '@odata.context': opts.context };
  if (query.$count === 'true') envelope['@odata.count'] = items.length;
  else if (query.$count !== undefined && query.$count !== 'false')
    throw badRequest(`Invalid value '${query.$count}' for $count.`);
  envelope.value = value;
  if (skip + top < items.length) {
    const next = { ...query, $top: String(top), $skip: String(skip + top) };
    envelope['@odata.nextLink'] = `${opts.selfUrl}?${Object.entries(next)
      .map(([k, v]) => `${encode(k)}=${encode(v)}`)
      .join('&')}`;
  }
  return envelope;
}
