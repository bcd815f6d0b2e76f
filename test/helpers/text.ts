/**
 * A value as text, exactly as a template literal or `String()` would write it. Fakes and tests read parsed query
 * strings and JSON bodies whose types are wide (`ParsedQs`, `unknown`); this names the conversion once, typed as
 * taking anything, instead of stringifying a value whose type says it might be an object.
 */
export function asText(v: unknown): string {
  return String(v);
}
