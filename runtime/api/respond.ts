/**
 * What every route of the API shares, whichever way it is served: the request id, the bearer-token check, and
 * one error renderer, so an error looks the same on every path.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Services } from '../services.ts';
import {
  AuthorizationRequiredError,
  ProviderError,
  ServiceError,
  unauthorized,
  type ErrorCode,
} from '../../core/errors.ts';
import { requestId } from '../ids.ts';
import type { TokenClaims } from '../auth/service-auth.ts';

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function resultPage(title: string, message: string, ok: boolean): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#1f2933}
h1{font-size:1.4rem;color:${ok ? '#17653d' : '#9b1c1c'}}</style></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></body></html>`;
}

export type AnyRequest = IncomingMessage & {
  requestId?: string;
  credentialId?: string;
  /** The verified token's claims: its credential, scopes and connections. */
  access?: TokenClaims;
};

const BEARER = /^Bearer\s+(\S+)$/i;

/**
 * The bearer token check of every API route: signature, audience, expiry, credential not revoked. Settled at once
 * (undefined) for a token this process has verified and whose state it knows to be fresh; a promise otherwise.
 */
export function authenticate(s: Services, req: AnyRequest): Promise<void> | undefined {
  const header = req.headers.authorization ?? '';
  // "Bearer " and a token this process verified before needs no pattern: a token it signed holds no whitespace, so
  // the pattern would have taken the same string. The pattern ran over the whole token on every request: about 4
  // thousand instructions under callgrind, 1.5 % of a proxied request (bench/RESULTS.md). Anything else, a known
  // token written another way ("bearer", two spaces) included, goes through the pattern and `verify`.
  if (header.startsWith('Bearer ')) {
    const known = s.tokens.knownClaims(header.slice(7), req);
    if (known) {
      req.credentialId = known.credentialId;
      req.access = known;
      return undefined;
    }
  }
  const token = BEARER.exec(header)?.[1];
  if (!token) throw unauthorized('Send Authorization: Bearer <token>; get a token from POST /oauth/token');
  return s.tokens.verify(token, req).then((claims) => {
    req.credentialId = claims.credentialId;
    req.access = claims;
  });
}

/** Gives the request its id (the client's, when it is a sane one); refuses anything but HTTP/1.x. */
export function startRequest(req: AnyRequest, res: ServerResponse): boolean {
  const given = req.headers['x-request-id'];
  req.requestId = typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : requestId();
  res.setHeader('x-request-id', req.requestId);
  // Node reads a request line without a version as HTTP/0.9, yet still parses header lines after it: a raw line
  // break in the target ("GET /proxy/x?q=a<CR><LF>X-Evil: 1") would turn the rest of the target into a header
  // the proxy forwards. HTTP/0.9 has no headers at all, so such a request can only be an attack.
  if (req.httpVersionMajor !== 1) {
    sendJson(res, 400, errorBody(req, 'bad_request', 'Only HTTP/1.0 and HTTP/1.1 requests are accepted'), {
      'x-error-source': 'service',
    });
    return false;
  }
  return true;
}

export function errorBody(
  req: AnyRequest,
  code: ErrorCode,
  message: string,
  details?: unknown,
  extra: Record<string, unknown> = {},
) {
  return { error: { code, message, ...(details ? { details } : {}) }, request_id: req.requestId, ...extra };
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/**
 * Every error the API answers, in one shape: a provider's refusal keeps the provider's status and body and is
 * marked `x-error-source: provider`; everything else is the service's own, marked `service`.
 */
export function renderError(s: Services, err: unknown, req: AnyRequest, res: ServerResponse): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const execution = (err as { executionId?: string }).executionId;
  const extra = execution ? { execution_id: execution } : {};
  if (err instanceof ProviderError) {
    const status = err.status >= 400 && err.status <= 599 ? err.status : 502;
    const headers: Record<string, string> = { 'x-error-source': 'provider' };
    const retryAfter = err.headers['retry-after'];
    if (typeof retryAfter === 'string') headers['retry-after'] = retryAfter;
    sendJson(
      res,
      status,
      {
        ...errorBody(req, 'provider_error', `The provider answered HTTP ${err.status}`, undefined, extra),
        error: {
          code: 'provider_error',
          message: `The provider answered HTTP ${err.status}`,
          provider_status: err.status,
          provider_body: err.body ?? null,
        },
      },
      headers,
    );
    return;
  }
  // Everything below is the service's own answer: marked so, or a client could take it for the provider's.
  const service = { 'x-error-source': 'service' };
  if (err instanceof ServiceError) {
    const body = errorBody(req, err.code, err.message, err.details, extra);
    if (err instanceof AuthorizationRequiredError) Object.assign(body.error, err.errorFields());
    sendJson(res, err.status, body, {
      ...service,
      ...(err.headers ?? {}),
    });
    return;
  }
  const e = err as { type?: string; status?: number; message?: string; limit?: number };
  if (e?.type === 'entity.too.large') {
    // The limit of the parser that refused it: each route has its own (16 KB for /oauth/token).
    const limit = typeof e.limit === 'number' ? e.limit : s.config.bodyLimitBytes;
    sendJson(
      res,
      413,
      errorBody(req, 'payload_too_large', `The request body is larger than ${limit} bytes, this route's limit`),
      service,
    );
    return;
  }
  if (e?.type === 'entity.parse.failed') {
    // The parser's message may quote the body around the error, and the body may carry credentials: only the
    // position of the error goes back to the client.
    const at = /at position (\d+)/.exec(e.message ?? '');
    const where = at
      ? ` (error at position ${at[1]})`
      : /end of JSON input/.test(e.message ?? '')
        ? ' (it ends too early)'
        : '';
    sendJson(res, 400, errorBody(req, 'invalid_json', `The request body is not valid JSON${where}`), service);
    return;
  }
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    sendJson(res, 415, errorBody(req, 'unsupported_media_type', e.message ?? 'Unsupported encoding'), service);
    return;
  }
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) {
    sendJson(res, e.status, errorBody(req, 'bad_request', e.message ?? 'Bad request'), service);
    return;
  }
  s.log.error({ requestId: req.requestId, err: (err as Error)?.stack ?? String(err) }, 'unhandled error');
  sendJson(
    res,
    500,
    errorBody(req, 'internal_error', `Internal error; quote request id ${req.requestId}`, undefined, extra),
    service,
  );
}

/**
 * The result pages of an authorization (`/sso/…`): nothing to load, no script, never framed (a page another
 * site frames could be clickjacked into a consent), never cached.
 */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

export function sendHtml(res: ServerResponse, status: number, html: string): void {
  res.writeHead(status, {
    ...PAGE_HEADERS,
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(html),
  });
  res.end(html);
}

/** A 302, without a body, to an absolute URL the service built (already encoded). */
export function redirect(res: ServerResponse, url: string): void {
  res.writeHead(302, { location: url, 'content-length': 0 });
  res.end();
}
