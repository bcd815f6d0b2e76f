import { ServiceError } from '../../core/errors.ts';
import type { FieldError } from '../../core/tool-types.ts';

type Kind = 'string' | 'boolean' | 'object' | 'string[]' | 'integer';

export interface FieldRule {
  kind: Kind;
  required?: boolean;
  pattern?: RegExp;
  patternMessage?: string;
  maxLength?: number;
  min?: number;
  max?: number;
  oneOf?: readonly string[];
}

/**
 * Checks a JSON request body against a small field table and returns it typed. Unknown fields, wrong
 * types and missing required fields are all reported at once as a 400 naming each field.
 */
export function checkBody<T extends Record<string, unknown>>(
  body: unknown,
  rules: Record<keyof T & string, FieldRule>,
  what: string,
): T {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ServiceError(400, 'invalid_input', `The request body must be a JSON object (${what})`, [
      { field: '(body)', message: 'must be a JSON object' },
    ]);
  }
  const b = body as Record<string, unknown>;
  const errors: FieldError[] = [];
  for (const key of Object.keys(b)) {
    if (!(key in rules))
      errors.push({ field: key, message: `is not a field of ${what} (fields: ${Object.keys(rules).join(', ')})` });
  }
  for (const [field, rule] of Object.entries(rules) as Array<[string, FieldRule]>) {
    const v = b[field];
    if (v === undefined || v === null) {
      if (rule.required) errors.push({ field, message: 'is required' });
      continue;
    }
    const problem = checkValue(v, rule);
    if (problem) errors.push({ field, message: problem });
  }
  if (errors.length) {
    throw new ServiceError(
      400,
      'invalid_input',
      `Invalid ${what}: ${errors.map((e) => `${e.field} ${e.message}`).join('; ')}`,
      errors,
    );
  }
  return b as T;
}

function checkValue(v: unknown, rule: FieldRule): string | undefined {
  switch (rule.kind) {
    case 'string':
      if (typeof v !== 'string') return 'must be a string';
      if (rule.maxLength !== undefined && v.length > rule.maxLength)
        return `must have at most ${rule.maxLength} characters`;
      if (rule.required && v.length === 0) return 'must not be empty';
      if (rule.oneOf && !rule.oneOf.includes(v)) return `must be one of: ${rule.oneOf.join(', ')}`;
      if (rule.pattern && !rule.pattern.test(v)) return rule.patternMessage ?? `must match ${rule.pattern}`;
      return undefined;
    case 'boolean':
      return typeof v === 'boolean' ? undefined : 'must be true or false';
    case 'integer':
      if (typeof v !== 'number' || !Number.isInteger(v)) return 'must be an integer';
      if (rule.min !== undefined && v < rule.min) return `must be at least ${rule.min}`;
      if (rule.max !== undefined && v > rule.max) return `must be at most ${rule.max}`;
      return undefined;
    case 'object':
      return typeof v === 'object' && !Array.isArray(v) ? undefined : 'must be an object';
    case 'string[]':
      return Array.isArray(v) && v.every((x) => typeof x === 'string') ? undefined : 'must be an array of strings';
  }
}

/**
 * An end user's identifier: any text the client chooses, 1–255 characters, no control characters, and
 * well-formed Unicode (the store keeps UTF-8, where every lone surrogate becomes U+FFFD: two identifiers would
 * become one account).
 */
export const IDENTIFIER: FieldRule = {
  kind: 'string',
  required: true,
  maxLength: 255,
  pattern: /^[^\u0000-\u001f\u007f\uD800-\uDFFF]+$/u,
  patternMessage: 'must be 1-255 characters of well-formed text without control characters',
};

export const CONNECTION_NAME: FieldRule = {
  kind: 'string',
  required: true,
  pattern: /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/,
  patternMessage: 'must be 1-64 characters of letters, digits, _ . - (starting with a letter or digit)',
};

export function queryString(v: unknown, field: string): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string')
    throw new ServiceError(400, 'invalid_input', `${field} must be given once`, [
      { field, message: 'must be a single value' },
    ]);
  return v;
}
