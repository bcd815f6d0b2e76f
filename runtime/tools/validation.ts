import type { AjvError, FieldError, ToolDefinition } from '../../core/tool-types.ts';
import { mustBeType } from '../../core/errors.ts';

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
