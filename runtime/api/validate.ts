/**
 * Checks the parts of a request (body, path parameters, query) with the validators generated from the endpoint
 * schemas of core/api (generated/api/), and turns what they find into a 400 `invalid_input` naming every bad field.
 */
import { endpoints, type Endpoint, type OperationId } from '../../core/api/endpoints.ts';
import type { JsonSchema } from '../../core/api/schemas.ts';
import { invalidInput, ServiceError } from '../../core/errors.ts';
import type { AjvError, FieldError, StandaloneValidator } from '../../core/tool-types.ts';
import * as requestValidators from '../../generated/api/validators.ts';
import * as queryValidators from '../../generated/api/query-validators.ts';

export type RequestPart = 'body' | 'params' | 'query';

const MAX_ERRORS = 50;

const validators: Record<string, StandaloneValidator | undefined> = { ...requestValidators, ...queryValidators };

/** The validator of one part of an endpoint's request; every part an endpoint declares has one. */
export function validatorFor(operation: OperationId, part: RequestPart): StandaloneValidator {
  const v = validators[`${operation}_${part}`];
  if (!v) throw new Error(`no generated validator ${operation}_${part}: run npm run generate`);
  return v;
}

function schemaOf(e: Endpoint, part: RequestPart): JsonSchema {
  return (part === 'body' ? e.body?.schema : part === 'params' ? e.params : e.query) ?? {};
}

const article = (noun: string) => `${/^[aeiou]/i.test(noun) ? 'an' : 'a'} ${noun}`;

function nounOf(e: Endpoint, part: RequestPart): string {
  return part === 'body' ? (e.noun ?? 'request body') : part === 'params' ? 'path' : 'query';
}

/** The schema at a JSON pointer (`#/properties/a/items`) of `root`. */
function schemaAt(root: JsonSchema, pointer: string[]): JsonSchema | undefined {
  let s: unknown = root;
  for (const key of pointer) {
    if (!s || typeof s !== 'object' || !Object.hasOwn(s, key)) return undefined;
    s = (s as Record<string, unknown>)[key];
  }
  return s && typeof s === 'object' ? (s as JsonSchema) : undefined;
}

function segments(pointer: string): string[] {
  return pointer
    .replace(/^#/, '')
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function fieldPath(parts: string[]): string {
  let out = '';
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out ? `.${p}` : p;
  return out;
}

function valueAt(data: unknown, parts: string[]): unknown {
  let v = data;
  for (const p of parts) {
    if (!v || typeof v !== 'object' || !Object.hasOwn(v, p)) return undefined;
    v = (v as Record<string, unknown>)[p];
  }
  return v;
}

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  integer: 'an integer',
  number: 'a number',
};

function message(e: Endpoint, part: RequestPart, error: AjvError, data: unknown): FieldError {
  const root = schemaOf(e, part);
  const at = segments(error.instancePath);
  const schemaPath = segments(error.schemaPath);
  const node = schemaAt(root, schemaPath.slice(0, -1));
  const p = error.params;
  const field = (extra?: string) => fieldPath(extra === undefined ? at : [...at, extra]) || '(body)';
  switch (error.keyword) {
    case 'required':
      return { field: field(String(p.missingProperty)), message: 'is required' };
    case 'additionalProperties': {
      const known = Object.keys((node?.properties as object | undefined) ?? {});
      const owner = at.length ? fieldPath(at) : article(nounOf(e, part));
      return {
        field: field(String(p.additionalProperty)),
        message: known.length ? `is not a field of ${owner} (fields: ${known.join(', ')})` : 'is not allowed here',
      };
    }
  }
  if (error.keyword === 'type' && valueAt(data, at) === null) {
    // null stands for "not given" in an optional field; in a required one it is as missing as an absent one.
    const parent = schemaAt(root, schemaPath.slice(0, -3));
    if (((parent?.required as string[] | undefined) ?? []).includes(at.at(-1) ?? ''))
      return { field: field(), message: 'is required' };
  }
  if (node && typeof node['x-message'] === 'string') return { field: field(), message: node['x-message'] };
  switch (error.keyword) {
    case 'type': {
      const types = (Array.isArray(p.type) ? p.type : String(p.type).split(',')).filter((t) => t !== 'null');
      const items = (node?.items as JsonSchema | undefined)?.type;
      const name = (t: string) => (t === 'array' && items === 'string' ? 'an array of strings' : (TYPE_NAMES[t] ?? t));
      return { field: field(), message: `must be ${types.map(name).join(' or ')}` };
    }
    case 'minLength':
      return {
        field: field(),
        message: p.limit === 1 ? 'must not be empty' : `must have at least ${p.limit as number} characters`,
      };
    case 'maxLength':
      return { field: field(), message: `must have at most ${p.limit as number} characters` };
    case 'minimum':
      return { field: field(), message: `must be at least ${p.limit as number}` };
    case 'maximum':
      return { field: field(), message: `must be at most ${p.limit as number}` };
    case 'enum':
      return { field: field(), message: `must be one of: ${(p.allowedValues as unknown[]).join(', ')}` };
    case 'const':
      return { field: field(), message: `must be ${JSON.stringify(p.allowedValue)}` };
    case 'pattern':
      return { field: field(), message: `must match the pattern ${p.pattern as string}` };
    case 'minItems':
      return {
        field: field(),
        message: p.limit === 1 ? 'must have at least one item' : `must have at least ${p.limit as number} items`,
      };
    case 'maxItems':
      return { field: field(), message: `must have at most ${p.limit as number} items` };
    case 'uniqueItems':
      return {
        field: field(),
        message: `must not repeat an item (items ${p.j as number} and ${p.i as number} are the same)`,
      };
    default:
      return { field: field(), message: 'is invalid' };
  }
}

/** Every problem with one part of a request, one per field, at most MAX_ERRORS. */
export function requestErrors(operation: OperationId, part: RequestPart, value: unknown): FieldError[] {
  const validate = validatorFor(operation, part);
  if (validate(value)) return [];
  const e: Endpoint = endpoints[operation];
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const error of validate.errors ?? []) {
    const f = message(e, part, error, value);
    if (seen.has(f.field)) continue;
    seen.add(f.field);
    out.push(f);
    if (out.length === MAX_ERRORS) break;
  }
  return out;
}

/**
 * Checks one part of a request and returns it typed, or throws a 400 `invalid_input` whose `details` name every
 * bad field. A query is converted in place to the declared types, with defaults filled in.
 */
export function checkRequest<T>(operation: OperationId, part: RequestPart, value: unknown): T {
  const e: Endpoint = endpoints[operation];
  if (part === 'body' && (value === null || typeof value !== 'object' || Array.isArray(value))) {
    throw new ServiceError(
      400,
      'invalid_input',
      `The request body must be a JSON object (${article(nounOf(e, part))})`,
      [{ field: '(body)', message: 'must be a JSON object' }],
    );
  }
  if (part === 'query') {
    // A parameter given twice arrives as a list: refused before it could be taken for either value.
    const declared = e.query?.properties ?? {};
    for (const [field, v] of Object.entries(value as object)) {
      if (Array.isArray(v) && Object.hasOwn(declared, field))
        throw new ServiceError(400, 'invalid_input', `${field} must be given once`, [
          { field, message: 'must be a single value' },
        ]);
    }
  }
  const errors = requestErrors(operation, part, value);
  if (errors.length) throw invalidInput(errors, nounOf(e, part));
  return value as T;
}
