import type { ErrorCode } from './error-codes.ts';
import type { FieldError } from './tool-types.ts';

export type { ErrorCode };

/** An error of the service itself, rendered as {"error":{"code","message","details"}}. */
export class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: FieldError[] | Record<string, unknown>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export const badRequest = (message: string, details?: FieldError[]) =>
  new ServiceError(400, details ? 'invalid_input' : 'bad_request', message, details);
export const invalidInput = (details: FieldError[], what = 'input') =>
  new ServiceError(
    400,
    'invalid_input',
    `Invalid ${what}: ${details.map((d) => `${d.field} ${d.message}`).join('; ')}`,
    details,
  );
export const notFound = (what: string) => new ServiceError(404, 'not_found', `${what} not found`);
export const conflict = (code: ErrorCode, message: string) => new ServiceError(409, code, message);
export const unauthorized = (message = 'Missing or invalid bearer token') =>
  new ServiceError(401, 'unauthorized', message, undefined, { 'www-authenticate': 'Bearer' });

/**
 * The provider answered with an error. Kept apart from service errors: the client gets the provider's
 * status and body, marked with code "provider_error".
 */
export class ProviderError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string | string[] | undefined> = {},
  ) {
    super(`The provider answered ${status}`);
  }
}

/** The provider could not be reached, timed out, or sent something unusable. */
export class UpstreamFailure extends ServiceError {
  constructor(code: ErrorCode, message: string, status = 502) {
    super(status, code, message);
  }
}

/** "must be a string", "must be an array", "must be a string or a number" for a value of the wrong JSON type. */
export function mustBeType(type: unknown): string {
  const names = (Array.isArray(type) ? type : String(type).split(',')).map((t) => {
    const name = String(t).trim();
    return `${/^[aeiou]/.test(name) ? 'an' : 'a'} ${name}`;
  });
  return `must be ${names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names.at(-1)}` : names[0]}`;
}
