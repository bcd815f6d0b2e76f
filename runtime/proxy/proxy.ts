import type { IncomingMessage, ServerResponse } from 'node:http';
import { processCache } from '../caches.ts';
import type { Logger } from '../log.ts';
import { newSortableId } from '../ids.ts';
import { ServiceError } from '../../core/errors.ts';
import type { AccountService, LiveAccount, ResolvedAccount } from '../accounts/service.ts';
import type { Account } from '../store/types.ts';
import { reasonOf, type JustInTime } from '../connect/just-in-time.ts';
import type { ActivityRecorder } from '../activity.ts';
import { credentialHeaderNames } from '../connectors/catalog.ts';
import type { CredentialApply } from '../../core/spec-model.ts';
import type { Upstream } from '../upstream/upstream.ts';
import type { StreamedAnswer } from '../upstream/stream.ts';
import { setOwn } from '../../core/own.ts';
import { StreamMemory } from './stream-memory.ts';

/**
 * A header name as servers may read it: without regard to case, and with `_` read as `-` (nginx with
 * underscores_in_headers, CGI-style frameworks, many application servers treat `x_api_key` as `x-api-key`).
 * Every check on the client's header names is made on this form, so no spelling slips past one.
 */
export const canonicalHeaderName = (name: string): string => {
  const lower = name.toLowerCase();
  return lower.includes('_') ? lower.replace(/_/g, '-') : lower;
};

/**
 * Headers that describe one hop, or that belong to the client's session with this service, in canonical form
 * (`connection_name` is `connection-name`).
 */
const DROP_REQUEST = new Set([
  'host',
  'authorization',
  'cookie',
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  // Answered by this service (Node sends the client its 100 Continue); the body then comes as any other.
  'expect',
  'connection-name',
  'identifier',
  'x-connection-name',
  'x-identifier',
  'x-identifier-encoded',
  'x-request-id',
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-real-ip',
]);
// x-error-source is the service's to set: a provider must not pass its answer off as a service error.
const DROP_RESPONSE = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'set-cookie',
  'x-error-source',
]);

export function header(req: IncomingMessage, ...names: string[]): string | undefined {
  for (const n of names) {
    const v = req.headers[n];
    if (typeof v === 'string' && v !== '') return v;
  }
  return undefined;
}

/**
 * The connected account's identifier. Header values are Latin-1 text on the wire, so an identifier that is not
 * printable ASCII (any other script, emoji, leading or trailing spaces) comes as `x-identifier-encoded`:
 * its UTF-8 bytes percent-encoded.
 */
export function proxyIdentifier(req: IncomingMessage): string | undefined {
  const plain = header(req, 'identifier', 'x-identifier');
  const encoded = header(req, 'x-identifier-encoded');
  if (encoded === undefined) return plain;
  if (plain !== undefined) {
    throw new ServiceError(
      400,
      'invalid_input',
      'Give the identifier once: identifier (or x-identifier), or x-identifier-encoded',
      [{ field: 'x-identifier-encoded', message: 'must not be combined with identifier' }],
    );
  }
  try {
    return decodeURIComponent(encoded);
  } catch {
    throw new ServiceError(400, 'invalid_input', 'x-identifier-encoded must be percent-encoded UTF-8', [
      { field: 'x-identifier-encoded', message: 'is not percent-encoded UTF-8' },
    ]);
  }
}

/** Decodes the percent-encoded ASCII bytes of a string, leaving anything else as it is. */
const decodeAscii = (s: string) =>
  s.replace(/%([0-7][0-9a-f])/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));

/** What makes a path (raw, or after some decodings) unfit to append to the provider's API root. */
function pathProblem(text: string): string | undefined {
  if (/^\/?[a-z][a-z0-9+.-]*:/i.test(text) || text.includes('://')) return 'must be a path, not an absolute URL';
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(text)) return 'must not contain control characters (raw or percent-encoded)';
  if (text.includes('\\') || /%5c/i.test(text)) return 'must not contain backslashes (raw or percent-encoded)';
  if (/%2f/i.test(text)) return 'must not contain encoded slashes (%2F)';
  // "." and ".." segments, also with a ";parameter" (servlet containers read "..;" as "..").
  if (text.split('/').some((s) => /^\.\.?(;.*)?$/.test(s)))
    return 'must not contain . or .. segments (raw or percent-encoded)';
  return undefined;
}

/**
 * A path of segments made of letters, digits and `_ . ~ -` only, none of them `.` or `..`: what nearly every
 * proxied call sends. Nothing `proxyPathProblem` looks for can be in it (no scheme, `@`, whitespace, control
 * character, backslash, percent sign or dot segment), so it needs none of that function's work; a path that starts
 * with `//` is left to it too.
 */
const PLAIN_PATH = /^(?:\/(?!\.\.?(?:\/|$))[\w.~-]*)+$/;

/**
 * Checks an upstream path from the client (see `proxyPathProblem`), plain paths first: the whole check is a dozen
 * regular expressions and a split, about 6 000 instructions per proxied request for `/v2/tickets/123`.
 */
export function checkProxyPath(path: string): string | undefined {
  if (path.charCodeAt(1) !== 0x2f && PLAIN_PATH.test(path)) return undefined;
  return proxyPathProblem(path);
}

/**
 * What is wrong with an upstream path from the client, if anything. It must be a plain path relative to the
 * provider's API root: no scheme or host, no dot segments, no encoded slashes or backslashes, no control characters
 * — raw or percent-encoded, once or several times over (an upstream, or a server behind it, may decode again:
 * %252e%252e is ".." two decodings away).
 */
export function proxyPathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return 'must start with /';
  if (path.startsWith('//')) return 'must not start with // (a host change)';
  if (/\s/.test(path)) return 'must not contain whitespace';
  if (/^\/[^/]*@/.test(path)) return 'must not contain @ in its first segment';
  // Without a percent sign there is nothing to decode: the path is the only form to check.
  if (!path.includes('%')) return pathProblem(path);
  try {
    decodeURIComponent(path);
  } catch {
    return 'has malformed percent-encoding';
  }
  let text = path;
  for (let decodings = 0; decodings <= 3; decodings++) {
    const problem = pathProblem(text);
    if (problem) return problem;
    const decoded = decodeAscii(text);
    if (decoded === text) return undefined;
    text = decoded;
  }
  return 'is percent-encoded too many times over';
}

/** Bodies from this size on (or of unknown size) are streamed under StreamMemory's watch. */
const LARGE_BODY_BYTES = 1024 * 1024;
const largeBody = (contentLength: string | undefined) =>
  contentLength === undefined || !(Number(contentLength) < LARGE_BODY_BYTES);

/** The credential header names of a way of applying credentials, in canonical form (computed once per spec). */
const credentialNameSets = new WeakMap<CredentialApply, ReadonlySet<string>>();
function credentialNamesOf(apply: CredentialApply): ReadonlySet<string> {
  let names = credentialNameSets.get(apply);
  if (!names) {
    names = new Set(credentialHeaderNames(apply).map(canonicalHeaderName));
    credentialNameSets.set(apply, names);
  }
  return names;
}

/**
 * Base URLs parsed once: an account's base URL is the same string on every call. An LRU (HOST_CACHE_SIZE): base
 * URLs may come from account fields (a support desk's domain), one per account.
 */
const parsedBases = processCache<string, { origin: string; pathname: string }>('parsed_urls', 'hosts');
function parsedBase(base: string): { origin: string; pathname: string } {
  const cache = parsedBases();
  let parsed = cache.get(base);
  if (!parsed) {
    const u = new URL(base);
    parsed = { origin: u.origin, pathname: u.pathname };
    cache.set(base, parsed);
  }
  return parsed;
}

/**
 * `ANY /proxy/<path>`: forwards the request to the provider with the account's credentials injected and
 * streams both bodies (no buffering, so files of any size pass through), keeping the status and headers.
 */
export class ProxyHandler {
  /** Keeps the garbage of streamed bodies from piling up (see stream-memory.ts). */
  readonly memory = new StreamMemory();

  constructor(
    private accounts: AccountService,
    private upstream: Upstream,
    private activity: ActivityRecorder,
    private log: Logger,
  ) {}

  /** Makes the links of `authorization_required` (set by createServices). */
  justInTime?: JustInTime;

  /** An account error the end user fixes by connecting, as `authorization_required` with a link when one can be made. */
  private async authorizationFor(err: unknown, connectionName: string, identifier: string, account?: Account) {
    const reason = reasonOf(err);
    if (!reason || !this.justInTime) return err;
    const connection = await this.accounts.connectionByName(connectionName);
    return (await this.justInTime.required({ connection, identifier, reason, account, context: {} })) ?? err;
  }

  async handle(req: IncomingMessage, res: ServerResponse, rawPathAndQuery: string): Promise<void> {
    const started = performance.now();
    const connectionName = header(req, 'connection_name', 'x-connection-name');
    const identifier = proxyIdentifier(req);
    if (!connectionName || identifier === undefined) {
      const missing = [!connectionName && 'connection_name', identifier === undefined && 'identifier'].filter(
        Boolean,
      ) as string[];
      throw new ServiceError(
        400,
        'invalid_input',
        `Proxy requests need the headers connection_name and identifier (or x-connection-name / x-identifier)`,
        missing.map((m) => ({ field: m, message: 'header is required' })),
      );
    }
    const q = rawPathAndQuery.indexOf('?');
    const path = q < 0 ? rawPathAndQuery : rawPathAndQuery.slice(0, q);
    const query = q < 0 ? '' : rawPathAndQuery.slice(q + 1);
    const problem = checkProxyPath(path);
    if (problem)
      throw new ServiceError(400, 'invalid_proxy_path', `The upstream path ${problem}`, [
        { field: 'path', message: problem },
      ]);
    if (/[\r\n]/.test(query))
      throw new ServiceError(400, 'invalid_proxy_path', 'The query must not contain line breaks');

    let resolved: ResolvedAccount;
    try {
      resolved = await this.accounts.resolve({ connectionName, identifier }, req);
    } catch (e) {
      throw await this.authorizationFor(e, connectionName, identifier);
    }
    // One pass over the client's headers: refuse any that would set the credentials, and keep those to forward.
    const credentialNames = credentialNamesOf(resolved.auth.apply);
    const headers: Record<string, string | string[]> = {};
    for (const sent of Object.keys(req.headers)) {
      const v = req.headers[sent];
      const name = canonicalHeaderName(sent);
      if (name === 'x-upstream-authorization') {
        throw new ServiceError(400, 'credential_header_not_allowed', 'Credential headers are set by the service', [
          { field: sent, message: 'header may not be set by the client' },
        ]);
      }
      if (credentialNames.has(name)) {
        if (name !== 'authorization') {
          throw new ServiceError(
            400,
            'credential_header_not_allowed',
            `The ${sent} header carries the account's credentials; the service sets it`,
            [{ field: sent, message: 'header may not be set by the client' }],
          );
        }
        continue;
      }
      if (v === undefined || DROP_REQUEST.has(name)) continue;
      setOwn(headers, sent, v);
    }

    let live: LiveAccount;
    try {
      live = await this.accounts.live(resolved);
    } catch (e) {
      throw await this.authorizationFor(e, connectionName, identifier, resolved.account);
    }
    const base = this.accounts.baseUrlFor(live);
    const target = `${base}${path}${query ? `?${query}` : ''}`;
    const baseUrl = parsedBase(base);
    const targetUrl = new URL(target);
    if (targetUrl.origin !== baseUrl.origin || !targetUrl.pathname.startsWith(baseUrl.pathname)) {
      throw new ServiceError(400, 'invalid_proxy_path', 'The upstream path leaves the provider API root');
    }

    const hasBody =
      req.headers['content-length'] !== undefined
        ? req.headers['content-length'] !== '0'
        : req.headers['transfer-encoding'] !== undefined;
    const method = (req.method ?? 'GET').toUpperCase();
    let status = 0;
    let errorCode: string | null = null;
    this.accounts.touch(live.account.id);
    // Only a large body (or one of unknown length) makes enough garbage to watch; a small answer costs nothing here.
    let watched = hasBody && largeBody(req.headers['content-length']);
    if (watched) this.memory.begin();

    let upstream: StreamedAnswer | undefined;
    let piping = false;
    try {
      upstream = await this.upstream.stream(live, method, targetUrl, headers, hasBody ? req : undefined, res);
      status = upstream.statusCode;
      const length = upstream.headers['content-length'];
      if (!watched && largeBody(Array.isArray(length) ? length[0] : length)) {
        watched = true;
        this.memory.begin();
      }
      const out: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(upstream.headers)) if (v !== undefined && !DROP_RESPONSE.has(k)) out[k] = v;
      // A provider's error, passed through as it is, marked as the provider's (the client library and
      // the client's own retry logic tell it from the service's errors by this header).
      if (status >= 400) out['x-error-source'] = 'provider';
      res.writeHead(status, out);
      piping = true;
      await upstream.pipeTo(res);
    } catch (e) {
      // An answer that could not be passed on (its headers refused by Node, say) must not hold its connection.
      if (upstream && !piping) upstream.abort();
      errorCode = e instanceof ServiceError ? e.code : 'upstream_error';
      if (!status) status = e instanceof ServiceError ? e.status : 502;
      // The path only: a query string may carry provider parameters the operator's logs have no use for.
      this.log.warn(
        {
          connection: live.connection.name,
          method,
          path,
          code: errorCode,
          afterHeaders: res.headersSent,
          // What went wrong below the service's own errors (a transport error's message, which names no credential).
          ...(e instanceof ServiceError ? {} : { reason: String((e as Error)?.message ?? e).slice(0, 300) }),
        },
        'proxied request failed',
      );
      if (res.headersSent) {
        // The stream broke after the headers left: the client sees a truncated response, never a silent success.
        res.destroy(e as Error);
        return;
      }
      // An account found EXPIRED on the way (its refresh token refused after a 401): a link to reconnect.
      throw reasonOf(e) ? await this.authorizationFor(e, connectionName, identifier, live.account) : e;
    } finally {
      if (watched) this.memory.end();
      this.activity.record({
        id: newSortableId('prx'),
        kind: 'proxy',
        name: `${method} ${path}`,
        connectionName: live.connection.name,
        accountId: live.account.id,
        identifier: live.account.identifier,
        status,
        errorCode,
        latencyMs: Math.round(performance.now() - started),
        createdAt: Date.now(),
      });
    }
  }
}
