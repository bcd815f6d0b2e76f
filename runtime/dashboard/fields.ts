/**
 * Form fields for the dashboard's templates, and the tool explorer's mapping between a tool's JSON Schema
 * and an HTML form: strings as text inputs, enums as selects, booleans as true/false selects, numbers as
 * number inputs, arrays and objects as JSON text fields. Values are parsed just enough to give the tool's
 * own validator something typed; every rule (ranges, patterns, cross-field rules) stays the validator's.
 */
import type { FieldError, ToolDefinition } from '../../core/tool-types.ts';

export interface FieldOption {
  value: string;
  label: string;
  selected?: boolean;
}

export interface Field {
  id: string;
  name: string;
  label: string;
  /** `input` (with `type`), `select`, `textarea`. */
  kind: 'input' | 'select' | 'textarea';
  type?: string;
  value?: string;
  required?: boolean;
  hint?: string;
  /** Facts about the parameter shown under the label: type, default, bounds. */
  facts?: string;
  error?: string;
  options?: FieldOption[];
  placeholder?: string;
  autocomplete?: string;
  min?: number;
  max?: number;
  step?: string;
  inputmode?: string;
  mono?: boolean;
  list?: string;
}

export const fieldId = (name: string) =>
  `f-${name.replace(/[^A-Za-z0-9_-]/g, (c) => `_${c.charCodeAt(0).toString(16)}`)}`;

/** Puts each error next to its field; returns the errors that belong to no field of the form. */
export function attachErrors(
  fields: Field[],
  errors: readonly FieldError[],
  fieldOf: (error: FieldError) => string | undefined,
): FieldError[] {
  const general: FieldError[] = [];
  for (const e of errors) {
    const name = fieldOf(e);
    const f = name === undefined ? undefined : fields.find((x) => x.name === name);
    if (f) f.error = f.error ? `${f.error}; ${e.message}` : e.message;
    else general.push(e);
  }
  return general;
}

interface ParamSchema {
  type?: string | string[];
  description?: string;
  enum?: unknown[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  multipleOf?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  items?: ParamSchema;
  minItems?: number;
  maxItems?: number;
}

export interface ToolParam {
  name: string;
  schema: ParamSchema;
  required: boolean;
  secret: boolean;
  type: string;
  constraints: string;
}

const INPUT_PREFIX = 'input.';

function typeLabel(s: ParamSchema): string {
  const t = Array.isArray(s.type) ? s.type.join(' | ') : (s.type ?? 'any');
  if (t === 'array' && s.items) return `array<${typeLabel(s.items)}>`;
  if (t === 'number' && s.multipleOf === 1) return 'integer';
  return t;
}

function constraintsOf(s: ParamSchema): string {
  const out: string[] = [];
  if (s.enum) out.push(`one of ${s.enum.map((v) => String(v)).join(', ')}`);
  if (s.minimum !== undefined && s.maximum !== undefined) out.push(`${s.minimum}–${s.maximum}`);
  else if (s.minimum !== undefined) out.push(`≥ ${s.minimum}`);
  else if (s.maximum !== undefined) out.push(`≤ ${s.maximum}`);
  if (s.minLength !== undefined && s.minLength > 1) out.push(`at least ${s.minLength} characters`);
  if (s.maxLength !== undefined) out.push(`at most ${s.maxLength} characters`);
  if (s.minItems !== undefined) out.push(`at least ${s.minItems} item(s)`);
  if (s.maxItems !== undefined) out.push(`at most ${s.maxItems} items`);
  if (s.format) out.push(s.format);
  else if (s.pattern) out.push(`pattern ${s.pattern}`);
  return out.join('; ');
}

/** The tool's parameters in schema order, required ones first. */
export function toolParams(tool: ToolDefinition): ToolParam[] {
  const props = (tool.inputSchema.properties ?? {}) as Record<string, ParamSchema>;
  const required = new Set((tool.inputSchema.required as string[] | undefined) ?? []);
  const secret = new Set(tool.secretInputs ?? []);
  const params = Object.entries(props).map(([name, schema]) => ({
    name,
    schema,
    required: required.has(name),
    secret: secret.has(name),
    type: typeLabel(schema),
    constraints: constraintsOf(schema),
  }));
  return [...params.filter((p) => p.required), ...params.filter((p) => !p.required)];
}

const isJsonType = (s: ParamSchema) => {
  const t = Array.isArray(s.type) ? s.type : [s.type];
  return t.includes('array') || t.includes('object') || s.type === undefined;
};
const isNumberType = (s: ParamSchema) => s.type === 'number' || s.type === 'integer';

/** The explorer's form for a tool, filled with the submitted values (secret inputs are never echoed). */
export function toolFields(tool: ToolDefinition, values: Record<string, string>): Field[] {
  return toolParams(tool).map((p) => {
    const s = p.schema;
    const name = `${INPUT_PREFIX}${p.name}`;
    const value = p.secret ? '' : (values[name] ?? '');
    const facts = [p.type, p.constraints, s.default !== undefined ? `default ${JSON.stringify(s.default)}` : '']
      .filter(Boolean)
      .join(' · ');
    const base: Field = {
      id: fieldId(name),
      name,
      label: p.name,
      kind: 'input',
      required: p.required,
      hint: s.description,
      facts,
      value,
    };
    if (s.enum) {
      const options: FieldOption[] = [
        // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a choice's default is a scalar; String() is its label
        { value: '', label: s.default !== undefined ? `(default: ${String(s.default)})` : '—' },
      ];
      for (const v of s.enum) options.push({ value: String(v), label: String(v), selected: value === String(v) });
      return { ...base, kind: 'select', options };
    }
    if (s.type === 'boolean') {
      const options: FieldOption[] = [
        // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a choice's default is a scalar; String() is its label
        { value: '', label: s.default !== undefined ? `(default: ${String(s.default)})` : '—' },
      ];
      for (const v of ['true', 'false']) options.push({ value: v, label: v, selected: value === v });
      return { ...base, kind: 'select', options };
    }
    if (isNumberType(s)) {
      const whole = s.type === 'integer' || s.multipleOf === 1;
      return {
        ...base,
        type: 'number',
        step: whole ? '1' : 'any',
        min: s.minimum,
        max: s.maximum,
        inputmode: whole ? 'numeric' : 'decimal',
      };
    }
    if (isJsonType(s)) {
      const example = s.type === 'array' ? (s.items?.type === 'string' ? '["a", "b"]' : '[{ … }]') : '{ … }';
      return { ...base, kind: 'textarea', mono: true, placeholder: `JSON, e.g. ${example}` };
    }
    if (p.secret) return { ...base, type: 'password', autocomplete: 'off' };
    if ((s.maxLength ?? 0) > 200 || /body|content|description|text|html|notes?$/i.test(p.name))
      return { ...base, kind: 'textarea' };
    return { ...base, type: 'text' };
  });
}

/**
 * Reads a tool input from the submitted form. Empty fields are left out (the tool's defaults apply);
 * a number that does not parse stays a string so the validator names the field; JSON that does not
 * parse is reported here, next to its field.
 */
export function toolInputFromForm(
  tool: ToolDefinition,
  body: Record<string, unknown>,
): { input: Record<string, unknown>; errors: FieldError[] } {
  const input: Record<string, unknown> = {};
  const errors: FieldError[] = [];
  for (const p of toolParams(tool)) {
    const raw = body[`${INPUT_PREFIX}${p.name}`];
    if (typeof raw !== 'string' || raw === '') continue;
    const s = p.schema;
    if (s.enum) {
      input[p.name] = s.enum.find((v) => String(v) === raw) ?? raw;
    } else if (s.type === 'boolean') {
      input[p.name] = raw === 'true' ? true : raw === 'false' ? false : raw;
    } else if (isNumberType(s)) {
      const t = raw.trim();
      input[p.name] = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(t) ? Number(t) : raw;
    } else if (isJsonType(s)) {
      try {
        input[p.name] = JSON.parse(raw);
      } catch (e) {
        errors.push({ field: p.name, message: `must be valid JSON (${(e as Error).message})` });
      }
    } else {
      input[p.name] = raw;
    }
  }
  return { input, errors };
}

/** The form field a tool-input error belongs to: `tags[0]` and `recipients[1].address` belong to their parameter. */
export function toolErrorField(e: FieldError): string | undefined {
  const root = /^[^.[]+/.exec(e.field)?.[0];
  return root && root !== '(input)' ? `${INPUT_PREFIX}${root}` : undefined;
}
