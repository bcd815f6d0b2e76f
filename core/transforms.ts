/**
 * Named value transforms that request templates apply as `'{param|name}'` or with `$pipe` (each documented
 * with an example in docs/templates.md). They are pure, total on the values the validators let through, and
 * shared by the generator (which checks names) and the generated request builders (which call them).
 *
 * Only transforms any connector may use live here. A transform only one provider needs (its query-language escaping,
 * its path encoding) is the connector's own: its hook file (`specs/hooks/<connector>.ts`) exports it in
 * `export const transforms = { ... } satisfies ConnectorTransforms`, and the connector's templates use it by name.
 */

function splitCsv(value: unknown): string[] {
  return String(value)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

const DAY_NAMES = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];

export const transforms = {
  /** "a, b,c" → ["a","b","c"] */
  csv: (v: unknown): string[] => splitCsv(v),
  /** ["a","b"] → "a,b" */
  join_csv: (v: unknown): string => (Array.isArray(v) ? v.map(String).join(',') : String(v)),
  /**
   * A JSON array of strings, or comma/semicolon-separated text → string[]. Text that only looks like a JSON
   * array (`["a@x.com", b@x.com`) is read as a list with its brackets and quotes dropped, never thrown on.
   */
  list: (v: unknown): string[] => {
    if (Array.isArray(v)) return v.map(String);
    const s = String(v).trim();
    if (s.startsWith('[')) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(s);
      } catch {
        parsed = undefined;
      }
      if (Array.isArray(parsed))
        return parsed.map((x) => (typeof x === 'string' ? x : String((x as { address?: unknown })?.address ?? x)));
    }
    return s
      .split(/[;,]/)
      .map((x) => x.trim().replace(/^\[?\s*"?|"?\s*\]?$/g, ''))
      .filter(Boolean);
  },
  /** Parses a JSON string (validated beforehand by the tool's rules). */
  json: (v: unknown): unknown => (typeof v === 'string' ? JSON.parse(v) : v),
  lower: (v: unknown): string => String(v).toLowerCase(),
  upper: (v: unknown): string => String(v).toUpperCase(),
  string: (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v)),
  /** "2026-01-31T10:00:00Z" → "2026-01-31" */
  date: (v: unknown): string => String(v).slice(0, 10),
  /** "2026-09-07" or "2026-09-07T10:00:00+02:00" → 7 (the day of the month as written, offset ignored) */
  day_of_month: (v: unknown): number => Number(String(v).slice(8, 10)),
  /** "2026-09-07" or "2026-09-07T10:00:00+02:00" → 9 (the month as written, offset ignored) */
  month_of_year: (v: unknown): number => Number(String(v).slice(5, 7)),
  /** "2026-04-15" → "2026-04-15T00:00:00" */
  date_midnight: (v: unknown): string => `${String(v).slice(0, 10)}T00:00:00`,
  /** Drops a UTC offset or Z: "2026-04-15T09:00:00+02:00" → "2026-04-15T09:00:00" (the zone travels separately). */
  local_datetime: (v: unknown): string => {
    const s = String(v);
    const m = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?))?/.exec(s);
    if (!m) return s;
    const time = m[2] ?? '00:00:00';
    return `${m[1]}T${time.length === 5 ? `${time}:00` : time}`;
  },
  /** Wraps a search string in double quotes, as OData `$search` requires. */
  quote: (v: unknown): string => {
    const s = String(v);
    if (s.length >= 2 && s.startsWith('"') && s.endsWith('"')) return s;
    return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  },
  /**
   * A sort list ("folder, name asc,modifiedTime  desc") in the form many APIs document: keys separated by commas,
   * each optionally followed by " desc". Ascending is the default, so an explicit " asc" is dropped.
   */
  order_by: (v: unknown): string =>
    String(v)
      .split(',')
      .map((s) => s.trim().replace(/\s+/g, ' ').replace(/ asc$/, ''))
      .filter((s) => s.length > 0)
      .join(','),
  /** The part of an `actor:tool` value before the last colon. */
  before_last_colon: (v: unknown): string => {
    const s = String(v);
    const m = /^(.+):(.+)$/.exec(s);
    return m ? m[1]! : s;
  },
  /** "Monday, tue" → ["monday","tuesday"] */
  days_of_week: (v: unknown): string[] =>
    splitCsv(v).map((d) => {
      const lower = d.toLowerCase();
      return DAY_NAMES.find((n) => n.startsWith(lower.slice(0, 3))) ?? lower;
    }),
  /** Booleans and numbers as strings (CRM property values are strings). */
  to_string: (v: unknown): string => String(v),
} satisfies Record<string, (v: unknown) => unknown>;

export type TransformName = keyof typeof transforms;
/** The transforms a connector's hook file declares (`export const transforms`), for its own templates only. */
export type ConnectorTransforms = Record<string, (v: unknown) => unknown>;
export const transformNames = Object.keys(transforms) as TransformName[];

/** Parameterised steps: `{map: {from: to}}`, `{prefix: "x"}`, `{suffix: "x"}`. */
export function mapValue(v: unknown, table: Record<string, string>): unknown {
  const key = String(v);
  return Object.prototype.hasOwnProperty.call(table, key) ? table[key] : v;
}
