import type { AjvError, FieldError, ToolDefinition } from '../../core/tool-types.ts';
import { mustBeType, ServiceError } from '../../core/errors.ts';

function fieldPath(instancePath: string, extra?: string): string {
  const parts = instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) parts.push(extra);
  let out = '';
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out ? `.${p}` : p;
  return out || '(input)';
}

function distance(a: string, b: string): number {
  const dp = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = dp[0]!;
    dp[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = dp[j]!;
      dp[j] = Math.min(dp[j]! + 1, dp[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return dp[b.length]!;
}

/** "Did you mean" for a misspelt parameter. */
export function suggest(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of known) {
    const d = distance(name.toLowerCase(), k.toLowerCase());
    if (d < bestD) {
      bestD = d;
      best = k;
    }
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(name.length / 3)) ? best : undefined;
}

/** The words of a name: `mail_messages_list`, `mailMessagesList` and `mail-messages-list` → mail, message, list. */
function nameWords(name: string): Set<string> {
  return new Set(
    name
      .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
      .toLowerCase()
      .split(/[^a-z0-9]+/)
      .filter(Boolean)
      .map((w) => (w.length > 3 && w.endsWith('s') && !w.endsWith('ss') ? w.slice(0, -1) : w)),
  );
}

/**
 * The known names an unknown one most likely meant, best first (at most `limit`): names made of the same words
 * in another order or form (`mail_messages_list` → `mail_list_messages`), then a near spelling (edit distance,
 * as `suggest`), then names sharing at least half of their words with it.
 */
export function suggestNames(name: string, known: readonly string[], limit = 3): string[] {
  const words = nameWords(name);
  const scored = known
    .map((k) => {
      const other = nameWords(k);
      const shared = [...words].filter((w) => other.has(w)).length;
      const jaccard = shared / new Set([...words, ...other]).size;
      return { k, shared, jaccard, d: distance(name.toLowerCase(), k.toLowerCase()) };
    })
    .filter((c) => c.jaccard >= 0.5 && c.shared >= Math.min(2, words.size))
    .sort((a, b) => b.jaccard - a.jaccard || a.d - b.d || a.k.localeCompare(b.k));
  const sameWords = scored.filter((c) => c.jaccard === 1).map((c) => c.k);
  const near = suggest(name, known);
  return [...new Set([...sameWords, ...(near ? [near] : []), ...scored.map((c) => c.k)])].slice(0, limit);
}

/** The 404 for a tool name that is not in the registry, with the names it most likely meant. */
export function unknownToolError(name: string, known: readonly string[]): ServiceError {
  const hints = suggestNames(name, known);
  const hint = hints.length
    ? `did you mean ${hints[0]}${hints.length > 1 ? ` (or ${hints.slice(1).join(', ')})` : ''}?`
    : '';
  return new ServiceError(404, 'unknown_tool', `No tool named "${name}"${hint ? `; ${hint}` : ''}`, [
    { field: 'tool_name', message: `is not a known tool${hint ? ` (${hint})` : ''}` },
  ]);
}

function message(tool: ToolDefinition, e: AjvError): FieldError {
  const custom = tool.messages[e.schemaPath.replace(/^#/, '#')];
  const p = e.params;
  switch (e.keyword) {
    case 'required':
      return { field: fieldPath(e.instancePath, String(p.missingProperty)), message: 'is required' };
    case 'additionalProperties': {
      const name = String(p.additionalProperty);
      if (e.instancePath === '') {
        const known = Object.keys((tool.inputSchema.properties as Record<string, unknown>) ?? {});
        const hint = suggest(name, known);
        return {
          field: name,
          message: `is not a parameter of ${tool.name}${hint ? ` (did you mean ${hint}?)` : known.length ? ` (parameters: ${known.join(', ')})` : ' (it takes no parameters)'}`,
        };
      }
      return { field: fieldPath(e.instancePath, name), message: 'is not an allowed field here' };
    }
    case 'type':
      return {
        field: fieldPath(e.instancePath),
        message: mustBeType(p.type),
      };
    case 'enum':
      return {
        field: fieldPath(e.instancePath),
        message: `must be one of: ${(p.allowedValues as unknown[]).map(String).join(', ')}`,
      };
    case 'minimum':
      return { field: fieldPath(e.instancePath), message: `must be at least ${p.limit as number}` };
    case 'maximum':
      return { field: fieldPath(e.instancePath), message: `must be at most ${p.limit as number}` };
    case 'exclusiveMinimum':
      return { field: fieldPath(e.instancePath), message: `must be greater than ${p.limit as number}` };
    case 'exclusiveMaximum':
      return { field: fieldPath(e.instancePath), message: `must be less than ${p.limit as number}` };
    case 'minLength':
      return {
        field: fieldPath(e.instancePath),
        message: p.limit === 1 ? 'must not be empty' : `must have at least ${p.limit as number} characters`,
      };
    case 'maxLength':
      return { field: fieldPath(e.instancePath), message: `must have at most ${p.limit as number} characters` };
    case 'minItems':
      return { field: fieldPath(e.instancePath), message: `must have at least ${p.limit as number} item(s)` };
    case 'maxItems':
      return { field: fieldPath(e.instancePath), message: `must have at most ${p.limit as number} items` };
    case 'multipleOf':
      return { field: fieldPath(e.instancePath), message: custom ?? 'must be a whole number' };
    case 'pattern':
      return { field: fieldPath(e.instancePath), message: custom ?? `must match the pattern ${p.pattern as string}` };
    default:
      return { field: fieldPath(e.instancePath), message: custom ?? e.message ?? 'is invalid' };
  }
}

/** Deeper than any tool's schema goes; deeper values are refused before anything walks them recursively. */
export const MAX_INPUT_DEPTH = 32;
/** Problems reported at most, so that a large bad input cannot make a much larger error response. */
export const MAX_INPUT_ERRORS = 50;
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

function childPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent || '(input)'}[${key}]`;
  return parent ? `${parent}.${key}` : key;
}

/**
 * What a schema cannot say about any input: nesting within MAX_INPUT_DEPTH (checked iteratively, so a deep
 * value cannot overflow the stack here or in the recursive code after it) and text that is well-formed
 * Unicode (a lone surrogate cannot be percent-encoded into a URL or encoded as UTF-8).
 */
function checkShape(input: object): FieldError[] {
  const errors: FieldError[] = [];
  const stack: Array<[unknown, string, number]> = [[input, '', 0]];
  while (stack.length && errors.length < MAX_INPUT_ERRORS) {
    const [value, path, depth] = stack.pop()!;
    if (typeof value === 'string') {
      if (LONE_SURROGATE.test(value))
        errors.push({
          field: path || '(input)',
          message: 'must be well-formed Unicode text (it contains a lone surrogate)',
        });
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_INPUT_DEPTH) {
      errors.push({ field: path || '(input)', message: `nests deeper than ${MAX_INPUT_DEPTH} levels` });
      continue;
    }
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], childPath(path, i), depth + 1]);
      continue;
    }
    for (const key of Object.keys(value)) {
      if (LONE_SURROGATE.test(key))
        errors.push({ field: childPath(path, key), message: 'is a name that is not well-formed Unicode text' });
      stack.push([(value as Record<string, unknown>)[key], childPath(path, key), depth + 1]);
    }
  }
  return errors;
}

/**
 * Validates (and fills defaults into) a tool input with the tool's precompiled validator, then its
 * cross-field rules. Returns every problem, one per field (at most MAX_INPUT_ERRORS).
 */
export function validateToolInput(tool: ToolDefinition, input: unknown): FieldError[] {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return [{ field: 'tool_input', message: 'must be an object' }];
  }
  const errors = checkShape(input);
  if (errors.some((e) => e.message.startsWith('nests deeper'))) return errors;
  if (!tool.validate(input)) {
    for (const e of tool.validate.errors ?? []) errors.push(message(tool, e));
  }
  for (const e of tool.checkRules(input)) errors.push(e);
  const seen = new Set<string>();
  return errors.filter((e) => (seen.has(e.field) ? false : (seen.add(e.field), true))).slice(0, MAX_INPUT_ERRORS);
}
