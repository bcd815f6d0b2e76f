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

/** The HTTP status of `authorization_required`, the same on every route (tool calls, proxy calls). */
export const AUTHORIZATION_REQUIRED_STATUS = 403;

/** What an `authorization_required` error says beyond its message, as the API writes it (`error.<name>`). */
export interface AuthorizationRequiredInfo {
  /** A single-use link the end user opens to connect (or reconnect, or grant more scopes to) the account. */
  link: string;
  linkExpiresAt: number;
  connectionName: string;
  identifier: string;
  connectedAccountId: string;
  /** Why: the account is missing, waits for authorization, expired, was disconnected, or lacks scopes. */
  reason: 'not_connected' | 'pending_auth' | 'expired' | 'disconnected' | 'missing_scopes';
  /** The provider scopes the tool needs and the account was not granted (reason `missing_scopes`). */
  missingScopes?: string[];
}

/**
 * The end user must connect an account before the call can go ahead: the error carries a link for that
 * connection and identifier (REST `error.link`, the client library's AuthorizationRequiredError, MCP URL elicitation).
 */
export class AuthorizationRequiredError extends ServiceError {
  constructor(
    message: string,
    readonly info: AuthorizationRequiredInfo,
  ) {
    super(AUTHORIZATION_REQUIRED_STATUS, 'authorization_required', message);
  }

  /** The fields the API adds to `error`. */
  errorFields(): Record<string, unknown> {
    const i = this.info;
    return {
      link: i.link,
      link_expires_at: new Date(i.linkExpiresAt).toISOString(),
      reason: i.reason,
      connection_name: i.connectionName,
      identifier: i.identifier,
      connected_account_id: i.connectedAccountId,
      ...(i.missingScopes ? { missing_scopes: i.missingScopes } : {}),
    };
  }
}
