import type { AjvError, FieldError, ToolDefinition } from './types.ts';

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
      return { field: fieldPath(e.instancePath), message: `must be ${p.type === 'integer' ? 'an integer' : `a ${p.type}`}` };
    case 'enum':
      return { field: fieldPath(e.instancePath), message: `must be one of: ${(p.allowedValues as unknown[]).map(String).join(', ')}` };
    case 'minimum':
      return { field: fieldPath(e.instancePath), message: `must be at least ${p.limit}` };
    case 'maximum':
      return { field: fieldPath(e.instancePath), message: `must be at most ${p.limit}` };
    case 'exclusiveMinimum':
      return { field: fieldPath(e.instancePath), message: `must be greater than ${p.limit}` };
    case 'exclusiveMaximum':
      return { field: fieldPath(e.instancePath), message: `must be less than ${p.limit}` };
    case 'minLength':
      return { field: fieldPath(e.instancePath), message: p.limit === 1 ? 'must not be empty' : `must have at least ${p.limit} characters` };
    case 'maxLength':
      return { field: fieldPath(e.instancePath), message: `must have at most ${p.limit} characters` };
    case 'minItems':
      return { field: fieldPath(e.instancePath), message: `must have at least ${p.limit} item(s)` };
    case 'maxItems':
      return { field: fieldPath(e.instancePath), message: `must have at most ${p.limit} items` };
    case 'multipleOf':
      return { field: fieldPath(e.instancePath), message: custom ?? 'must be a whole number' };
    case 'pattern':
      return { field: fieldPath(e.instancePath), message: custom ?? `must match the pattern ${p.pattern}` };
    default:
      return { field: fieldPath(e.instancePath), message: custom ?? e.message ?? 'is invalid' };
  }
}

/**
 * Validates (and fills defaults into) a tool input with the tool's precompiled validator, then its
 * cross-field rules. Returns every problem, one per field.
 */
export function validateToolInput(tool: ToolDefinition, input: unknown): FieldError[] {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return [{ field: 'tool_input', message: 'must be an object' }];
  }
  const errors: FieldError[] = [];
  if (!tool.validate(input)) {
    for (const e of tool.validate.errors ?? []) errors.push(message(tool, e));
  }
  for (const e of tool.checkRules(input)) errors.push(e);
  const seen = new Set<string>();
  return errors.filter((e) => (seen.has(e.field) ? false : (seen.add(e.field), true)));
}
