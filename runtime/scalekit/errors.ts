import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { ProviderError, ServiceError, type ErrorCode } from '../../core/errors.ts';
import { ErrorInfoSchema, ToolErrorInfoSchema, ValidationErrorInfoSchema } from './descriptors.ts';
import type { Logger } from '../log.ts';

/** The service's own upstream failures that mean "try again later" rather than "this request is wrong". */
const UNAVAILABLE = new Set<ErrorCode>(['upstream_unreachable', 'upstream_connection_reset']);

function codeFor(e: ServiceError): Code {
  if (e.code === 'upstream_timeout' || e.status === 504) return Code.DeadlineExceeded;
  if (UNAVAILABLE.has(e.code) || e.status === 503) return Code.Unavailable;
  switch (e.status) {
    case 400:
    case 413:
    case 415:
      return Code.InvalidArgument;
    case 401:
      return Code.Unauthenticated;
    case 403:
      return Code.PermissionDenied;
    case 404:
      return Code.NotFound;
    case 409:
    case 410:
      return e.code === 'already_exists' ? Code.AlreadyExists : Code.FailedPrecondition;
    case 429:
      return Code.ResourceExhausted;
    case 501:
      return Code.Unimplemented;
    default:
      return Code.Internal;
  }
}

/** A provider's status, as the gRPC code the SDK turns into the matching tool exception. */
function providerCode(status: number): Code {
  if (status === 401) return Code.Unauthenticated;
  if (status === 403) return Code.PermissionDenied;
  if (status === 404) return Code.NotFound;
  if (status === 429) return Code.ResourceExhausted;
  if (status === 400 || status === 422) return Code.InvalidArgument;
  if (status === 503) return Code.Unavailable;
  return Code.Unknown;
}

/** Renames the REST field paths of a detail to the request's field names (credentials.x → static auth). */
export type FieldRenamer = (field: string) => string;

/**
 * Every error of the services, as the gRPC status and `ErrorInfo` detail the SDK reads: the same error a REST
 * client gets as `{"error":{"code","message","details"}}`. A provider's failure carries `error_code: TOOL_ERROR`
 * and `tool_error_info` (execution id, message, the provider's status), which the SDK never retries.
 */
export function toConnectError(e: unknown, log: Logger, rename: FieldRenamer = (f) => f): ConnectError {
  if (e instanceof ConnectError) return e;
  const executionId = (e as { executionId?: string } | undefined)?.executionId ?? '';
  if (e instanceof ProviderError) {
    const body = typeof e.body === 'string' ? e.body : e.body === undefined ? '' : safeJson(e.body);
    const message = `The provider answered HTTP ${e.status}${body ? `: ${body.slice(0, 2000)}` : ''}`;
    return new ConnectError(message, providerCode(e.status), undefined, [
      {
        desc: ErrorInfoSchema,
        value: create(ErrorInfoSchema, {
          errorCode: 'TOOL_ERROR',
          toolErrorInfo: create(ToolErrorInfoSchema, {
            executionId,
            toolErrorMessage: message,
            toolErrorCode: String(e.status),
          }),
        }),
      },
    ]);
  }
  if (e instanceof ServiceError) {
    const fields = Array.isArray(e.details) ? e.details : [];
    const violations = fields.map((f) => ({ field: rename(f.field), description: f.message }));
    let message = e.message;
    for (const f of fields) if (rename(f.field) !== f.field) message = message.replace(f.field, rename(f.field));
    return new ConnectError(message, codeFor(e), undefined, [
      {
        desc: ErrorInfoSchema,
        value: create(ErrorInfoSchema, {
          errorCode: e.code,
          ...(violations.length
            ? { validationErrorInfo: create(ValidationErrorInfoSchema, { fieldViolations: violations }) }
            : {}),
        }),
      },
    ]);
  }
  log.error({ err: e }, 'scalekit call failed');
  return new ConnectError('Internal error', Code.Internal);
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v);
  } catch {
    return '';
  }
}

/** A request field the SDK may send empty: absent is the same as "". */
export const given = (v: string | undefined): string | undefined => (v && v.trim() ? v.trim() : undefined);

export const invalidArgument = (field: string, message: string) =>
  new ServiceError(400, 'invalid_input', `Invalid request: ${field} ${message}`, [{ field, message }]);
