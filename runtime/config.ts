import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { dirname, resolve } from 'node:path';
import { parseKeyList } from './crypto/keys.ts';

/** Service configuration, read once from environment variables (documented in docs/configuration.md). */
export interface Config {
  port: number;
  host: string;
  /**
   * The service's public base URL, used in authorization links and OAuth redirect URIs. Empty when PORT is 0 and
   * PUBLIC_URL is not set, until startServer sets it from the port the system gave.
   */
  publicUrl: string;
  dataDir: string;
  /** postgres://… selects the PostgreSQL store; otherwise SQLite under dataDir. */
  databaseUrl?: string;
  /** DATABASE_SCHEMA: the PostgreSQL schema the store uses (its tables are made there); else the user's default. */
  databaseSchema?: string;
  /** DATABASE_POOL_SIZE: PostgreSQL connections this process holds at most. */
  databasePoolSize: number;
  /** "kid:base64key,kid2:base64key" — the first is used for new writes. Else a key file under dataDir. */
  encryptionKeys?: string;
  tokenTtlSeconds: number;
  linkTtlSeconds: number;
  /** Origins a client may send users back to after authorization (besides the service itself). */
  allowedRedirectOrigins: string[];
  /** The hosted connect page's branding (CONNECT_PRODUCT_NAME, CONNECT_LOGO_URL, CONNECT_PRIMARY_COLOUR). */
  connectBranding: { productName: string; logoUrl: string | null; primaryColour: string };
  bodyLimitBytes: number;
  /** A request body with no byte for this long is cut (408); on routes without authentication, one not complete
   * within twice this. */
  bodyIdleTimeoutMs: number;
  /** A request's line and headers must have arrived this long after its first byte, or it is cut (408); 0: no limit. */
  headersTimeoutMs: number;
  /**
   * A request (headers and body; not the answer) must have arrived this long after its first byte, or it is cut
   * (408); 0: no limit. Bounds slow uploads, including proxied ones; downloads and streams are not affected.
   */
  requestTimeoutMs: number;
  toolResponseLimitBytes: number;
  /** A tool's answer longer than this many tokens is cut at an item boundary, with a continuation. */
  toolAnswerBudgetTokens: number;
  /** Upper bound on every connector's upstream connect and response timeouts, in ms; 0 keeps the connectors' own. */
  upstreamTimeoutMaxMs: number;
  /** Refresh an access token this long before it expires. */
  refreshMarginSeconds: number;
  /** How the refreshes of a connection whose token endpoint refuses or fails most of them are paced. */
  refreshPacing: RefreshPacing;
  logLevel: string;
  /** Set the first API credential instead of generating one (for scripted deployments). */
  initialClientId?: string;
  initialClientSecret?: string;
  adminPassword?: string;
  /** Lifetime of a dashboard session (signing in again after it). */
  dashboardSessionTtlSeconds: number;
  /** Trust X-Forwarded-* from a reverse proxy. */
  trustProxy: boolean;
  /** After SIGTERM, how long in-flight requests and proxied streams may take to finish before they are cut. */
  shutdownGraceSeconds: number;
  /** When set, GET /metrics requires `Authorization: Bearer <this>`. */
  metricsToken?: string;
  /** Hosts (`host` or `host:port`) a webhook may reach even when they resolve to private addresses. */
  webhookAllowedHosts: string[];
  /**
   * Host names an end user's MCP URL may be reached at besides PUBLIC_URL's (the `Host` and `Origin` checks against
   * DNS rebinding): for a proxy that passes another `Host` on.
   */
  mcpAllowedHosts: string[];
  /**
   * Hosts (`host` or `host:port`) a connection's overrides (api_base_url, api_hosts, OAuth endpoints) may name
   * although they resolve to private, loopback or link-local addresses (UPSTREAM_ALLOWED_HOSTS).
   */
  upstreamAllowedHosts: string[];
  /** AUDIT_RETENTION_DAYS: audit entries older than this are pruned (the chain stays verifiable); 0 keeps them all. */
  auditRetentionDays: number;
  /** The first retry of a failed webhook delivery waits about this long; each next one twice as long (at most 1 h). */
  webhookRetryBaseMs: number;
  /** An idle keep-alive connection (HTTP/1.1), or an HTTP/2 session with no open stream, is closed after this long. */
  keepAliveTimeoutMs: number;
  /** HTTP/2 (gRPC) sessions one client address may hold at once; a further one is refused. */
  http2MaxSessionsPerClient: number;
  /** Worker processes sharing the port (node:cluster); 1 runs the service in this process. */
  workers: number;
  /** Native TLS (TLS_CERT_FILE and TLS_KEY_FILE): HTTPS with ALPN h2 and http/1.1 on the port; else plain HTTP. */
  tls?: TlsFiles;
  /** Size limits of the per-process caches (docs/scale.md): memory is bounded by these, not by the population. */
  caches: CacheLimits;
  /** Rows per batch of the background work proportional to the population (a connection delete, a sweep). */
  batchSize: number;
  /** The trigger engine (docs/triggers.md). */
  triggers: TriggerSettings;
  /** The OAuth-protected MCP endpoint (issue 39, docs/mcp.md): its tokens, and the service-wide OpenID provider. */
  mcpOAuth: McpOAuthSettings;
  /** DASHBOARD_OIDC_*: dashboard sign-in through the company's OpenID provider (issue 37, item 4); off when unset. */
  dashboardOidc?: DashboardOidcSettings;
}

/** How polling triggers are scheduled (docs/triggers.md, "Settings"). */
export interface TriggerSettings {
  /** No instance is polled more often than this (TRIGGER_MIN_INTERVAL_SECONDS, at least 1). */
  minIntervalSeconds: number;
  /** Polls in flight at once in this process. */
  concurrency: number;
  /** Polls in flight at once per connector (provider) in this process. */
  perConnectorConcurrency: number;
  /** Whether this process polls at all (TRIGGER_POLLER=0: it serves the API only). */
  poller: boolean;
  /** How long a poll holds its instance: a process that dies mid-poll leaves it to others after this long. */
  leaseSeconds: number;
  /** Push triggers: the largest notification body the ingress route reads (TRIGGER_INGRESS_MAX_BYTES). */
  ingressBodyLimitBytes: number;
  /** Push notification requests answered before their resources are read and still being read, at most (503 beyond). */
  ingressMaxPending: number;
}

/** Entries each per-process cache keeps at most (docs/scale.md, "Caches"). */
export interface CacheLimits {
  /** Connected-account rows, by id and by (connection, identifier). */
  accounts: number;
  /** Connection rows, and the OAuth discovery documents of MCP connections. */
  connections: number;
  /** Decrypted credentials (with the headers made from them), per account. */
  secrets: number;
  /** How long a decrypted credential stays in memory after it was opened, in ms. */
  secretsTtlMs: number;
  /** Verified service bearer tokens. */
  tokens: number;
  /** Parsed base URLs and DNS answers, by the hosts account fields name. */
  hosts: number;
  /** Open sessions with providers' MCP servers, per account and server. */
  mcpSessions: number;
}

/** A certificate (chain) and its private key, PEM, as read and checked at start. */
export interface TlsFiles {
  cert: Buffer;
  key: Buffer;
}

/** A setting the service cannot start with: names the environment variable and what is wrong with it. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

/** The shortest dashboard admin password accepted (ADMIN_PASSWORD, and passwords generated on first start). */
export const MIN_PASSWORD_LENGTH = 12;

function int(name: string, fallback: number, env: NodeJS.ProcessEnv, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isInteger(n) || n > max) {
    throw new ConfigError(name, `must be a whole number from 0 to ${max}, got "${raw}"`);
  }
  return n;
}

/** REFRESH_PACED_*: the bulkhead of a connection whose token endpoint refuses or fails most refreshes. */
export interface RefreshPacing {
  /** Refreshes that may run at once on such a connection. */
  concurrency: number;
  /** Refreshes that may wait for a slot there; one more is answered 503 at once. */
  queue: number;
}

export interface McpOAuthSettings {
  /** MCP_OAUTH_ACCESS_TOKEN_TTL_SECONDS: how long an access token for an MCP endpoint lives. */
  accessTokenTtlSeconds: number;
  /** MCP_OAUTH_REFRESH_TOKEN_TTL_SECONDS: how long a refresh token lives (each refresh rotates it). */
  refreshTokenTtlSeconds: number;
  /** MCP_OAUTH_OIDC_*: the OpenID provider end users sign in at, for an MCP server that names none of its own. */
  oidc?: { issuer: string; clientId: string; clientSecret?: string; identifierClaim: string };
}

/** The claim names an identifier may come from: an OpenID Connect claim name (no paths, no spaces). */
export const CLAIM_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;

/** An OpenID issuer: an http(s) URL without query or fragment, at most 512 characters. */
export function issuerProblem(value: string): string | undefined {
  if (value.length > 512) return `must be at most 512 characters (it has ${value.length})`;
  try {
    const u = new URL(value);
    if (u.protocol !== 'https:' && u.protocol !== 'http:') return `must be an https URL, got "${value}"`;
    if (u.search || u.hash) return 'must have no query or fragment (an issuer identifier)';
  } catch {
    return `must be an https URL, got "${value}"`;
  }
  return undefined;
}

function mcpOAuthSettings(env: NodeJS.ProcessEnv): McpOAuthSettings {
  const accessTokenTtlSeconds = int('MCP_OAUTH_ACCESS_TOKEN_TTL_SECONDS', 3600, env, 86_400) || 3600;
  const refreshTokenTtlSeconds =
    int('MCP_OAUTH_REFRESH_TOKEN_TTL_SECONDS', 30 * 86_400, env, 365 * 86_400) || 30 * 86_400;
  const issuer = (env.MCP_OAUTH_OIDC_ISSUER ?? '').trim();
  const clientId = env.MCP_OAUTH_OIDC_CLIENT_ID ?? '';
  const clientSecret = env.MCP_OAUTH_OIDC_CLIENT_SECRET ?? '';
  const claim = env.MCP_OAUTH_OIDC_IDENTIFIER_CLAIM || 'sub';
  if (!CLAIM_NAME.test(claim))
    throw new ConfigError(
      'MCP_OAUTH_OIDC_IDENTIFIER_CLAIM',
      `must be a claim name (letters, digits, _.:-, at most 64), got "${claim.slice(0, 80)}"`,
    );
  headerSafe('MCP_OAUTH_OIDC_CLIENT_ID', clientId, 1);
  headerSafe('MCP_OAUTH_OIDC_CLIENT_SECRET', clientSecret, 1);
  if (!issuer) {
    if (clientId || clientSecret)
      throw new ConfigError(
        'MCP_OAUTH_OIDC_ISSUER',
        'is required when MCP_OAUTH_OIDC_CLIENT_ID or _CLIENT_SECRET is set',
      );
    return { accessTokenTtlSeconds, refreshTokenTtlSeconds };
  }
  const problem = issuerProblem(issuer);
  if (problem) throw new ConfigError('MCP_OAUTH_OIDC_ISSUER', problem);
  if (!clientId) throw new ConfigError('MCP_OAUTH_OIDC_CLIENT_ID', 'is required when MCP_OAUTH_OIDC_ISSUER is set');
  return {
    accessTokenTtlSeconds,
    refreshTokenTtlSeconds,
    oidc: { issuer, clientId, ...(clientSecret ? { clientSecret } : {}), identifierClaim: claim },
  };
}

export interface DashboardOidcSettings {
  issuer: string;
  clientId: string;
  clientSecret?: string;
  /** The provider's name on the sign-in button ("Sign in with <name>"). */
  displayName: string;
  /** E-mail domains (lower case) whose verified addresses may sign in; empty: any. */
  allowedDomains: string[];
  /** The ID token (or userinfo) claim listing the user's groups. */
  groupsClaim: string;
  /** Group → role; the highest role of the user's groups wins. */
  roles: Map<string, 'admin' | 'operator' | 'viewer'>;
  /** The role of a user none of whose groups is mapped; undefined: such a user is refused. */
  defaultRole?: 'admin' | 'operator' | 'viewer';
}

const DASHBOARD_ROLE = /^(admin|operator|viewer)$/;

function dashboardOidcSettings(env: NodeJS.ProcessEnv): DashboardOidcSettings | undefined {
  const issuer = (env.DASHBOARD_OIDC_ISSUER ?? '').trim();
  const clientId = env.DASHBOARD_OIDC_CLIENT_ID ?? '';
  const clientSecret = env.DASHBOARD_OIDC_CLIENT_SECRET ?? '';
  headerSafe('DASHBOARD_OIDC_CLIENT_ID', clientId, 1);
  headerSafe('DASHBOARD_OIDC_CLIENT_SECRET', clientSecret, 1);
  const displayName = (env.DASHBOARD_OIDC_NAME ?? '').trim();
  // eslint-disable-next-line no-control-regex
  if (displayName.length > 60 || /[\u0000-\u001f\u007f]/.test(displayName))
    throw new ConfigError('DASHBOARD_OIDC_NAME', 'must be at most 60 characters without control characters');
  const allowedDomains = list('DASHBOARD_OIDC_ALLOWED_DOMAINS', env, (d) =>
    /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i.test(d)
      ? undefined
      : 'each entry must be an e-mail domain such as example.com',
  ).map((d) => d.toLowerCase());
  const groupsClaim = env.DASHBOARD_OIDC_GROUPS_CLAIM || 'groups';
  if (!CLAIM_NAME.test(groupsClaim))
    throw new ConfigError(
      'DASHBOARD_OIDC_GROUPS_CLAIM',
      `must be a claim name (letters, digits, _.:-, at most 64), got "${groupsClaim.slice(0, 80)}"`,
    );
  const roles = new Map<string, 'admin' | 'operator' | 'viewer'>();
  for (const entry of list('DASHBOARD_OIDC_ROLES', env, (e) => {
    const i = e.lastIndexOf(':');
    if (i <= 0 || e.length > 300) return 'each entry must be group:role, such as admins:admin';
    if (!DASHBOARD_ROLE.test(e.slice(i + 1).trim())) return 'the role must be admin, operator or viewer';
    return undefined;
  })) {
    const i = entry.lastIndexOf(':');
    roles.set(entry.slice(0, i).trim(), entry.slice(i + 1).trim() as 'admin' | 'operator' | 'viewer');
  }
  const rawDefault = (env.DASHBOARD_OIDC_DEFAULT_ROLE || 'none').trim();
  if (rawDefault !== 'none' && !DASHBOARD_ROLE.test(rawDefault))
    throw new ConfigError(
      'DASHBOARD_OIDC_DEFAULT_ROLE',
      `must be admin, operator, viewer or none, got "${rawDefault.slice(0, 80)}"`,
    );
  const defaultRole = rawDefault === 'none' ? undefined : (rawDefault as 'admin' | 'operator' | 'viewer');
  if (!issuer) {
    if (clientId || clientSecret)
      throw new ConfigError(
        'DASHBOARD_OIDC_ISSUER',
        'is required when DASHBOARD_OIDC_CLIENT_ID or _CLIENT_SECRET is set',
      );
    return undefined;
  }
  const problem = issuerProblem(issuer);
  if (problem) throw new ConfigError('DASHBOARD_OIDC_ISSUER', problem);
  if (!clientId) throw new ConfigError('DASHBOARD_OIDC_CLIENT_ID', 'is required when DASHBOARD_OIDC_ISSUER is set');
  if (roles.size === 0 && !defaultRole)
    throw new ConfigError(
      'DASHBOARD_OIDC_ROLES',
      'is required when DASHBOARD_OIDC_ISSUER is set and DASHBOARD_OIDC_DEFAULT_ROLE is none: without either, nobody could sign in',
    );
  return {
    issuer,
    clientId,
    ...(clientSecret ? { clientSecret } : {}),
    displayName: displayName || new URL(issuer).host,
    allowedDomains,
    groupsClaim,
    roles,
    ...(defaultRole ? { defaultRole } : {}),
  };
}

function triggerSettings(env: NodeJS.ProcessEnv): TriggerSettings {
  const minIntervalSeconds = int('TRIGGER_MIN_INTERVAL_SECONDS', 60, env, 86_400);
  if (minIntervalSeconds < 1) throw new ConfigError('TRIGGER_MIN_INTERVAL_SECONDS', 'must be at least 1 (second)');
  const concurrency = int('TRIGGER_CONCURRENCY', 32, env, 10_000);
  if (concurrency < 1) throw new ConfigError('TRIGGER_CONCURRENCY', 'must be at least 1');
  const perConnectorConcurrency = int('TRIGGER_PROVIDER_CONCURRENCY', 8, env, 10_000);
  if (perConnectorConcurrency < 1) throw new ConfigError('TRIGGER_PROVIDER_CONCURRENCY', 'must be at least 1');
  const poller = env.TRIGGER_POLLER ?? '1';
  if (poller !== '0' && poller !== '1') throw new ConfigError('TRIGGER_POLLER', `must be 0 or 1, got "${poller}"`);
  const leaseSeconds = int('TRIGGER_LEASE_SECONDS', 300, env, 86_400);
  if (leaseSeconds < 1) throw new ConfigError('TRIGGER_LEASE_SECONDS', 'must be at least 1 (second)');
  const ingressBodyLimitBytes = int('TRIGGER_INGRESS_MAX_BYTES', 256 * 1024, env, 16 * 1024 * 1024);
  if (ingressBodyLimitBytes < 1024) {
    throw new ConfigError('TRIGGER_INGRESS_MAX_BYTES', 'must be at least 1024 (a notification needs room)');
  }
  const ingressMaxPending = int('TRIGGER_INGRESS_MAX_PENDING', 256, env, 100_000);
  if (ingressMaxPending < 1) throw new ConfigError('TRIGGER_INGRESS_MAX_PENDING', 'must be at least 1');
  return {
    minIntervalSeconds,
    concurrency,
    perConnectorConcurrency,
    poller: poller === '1',
    leaseSeconds,
    ingressBodyLimitBytes,
    ingressMaxPending,
  };
}

/** TOOL_ANSWER_BUDGET_TOKENS: 8,000 by default; from 500 (an answer must hold a few items) to 1,000,000. */
function answerBudget(env: NodeJS.ProcessEnv): number {
  const budget = int('TOOL_ANSWER_BUDGET_TOKENS', 8000, env, 1_000_000);
  if (budget < 500) throw new ConfigError('TOOL_ANSWER_BUDGET_TOKENS', `is ${budget}: it must be at least 500`);
  return budget;
}

function readPem(name: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    const reason = (e as { code?: string }).code ?? (e instanceof Error ? e.message : 'unknown error');
    throw new ConfigError(name, `names a file that cannot be read: ${path} (${reason})`);
  }
}

/**
 * TLS_CERT_FILE and TLS_KEY_FILE, both or neither: read and checked here so that a wrong file stops the start with
 * the variable named, rather than failing every handshake later.
 */
function loadTls(env: NodeJS.ProcessEnv): TlsFiles | undefined {
  const certFile = env.TLS_CERT_FILE || undefined;
  const keyFile = env.TLS_KEY_FILE || undefined;
  if (!certFile && !keyFile) return undefined;
  if (!certFile || !keyFile) {
    const [set, unset] = certFile ? ['TLS_CERT_FILE', 'TLS_KEY_FILE'] : ['TLS_KEY_FILE', 'TLS_CERT_FILE'];
    throw new ConfigError(unset, `is not set but ${set} is: set both to serve HTTPS, or neither to serve plain HTTP`);
  }
  const cert = readPem('TLS_CERT_FILE', certFile);
  const key = readPem('TLS_KEY_FILE', keyFile);
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch {
    throw new ConfigError('TLS_CERT_FILE', `is not a PEM certificate: ${certFile}`);
  }
  let privateKey: ReturnType<typeof createPrivateKey>;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    // A passphrase-protected key lands here too: the service has no way to be given its passphrase.
    throw new ConfigError('TLS_KEY_FILE', `is not an unencrypted PEM private key: ${keyFile}`);
  }
  if (!x509.checkPrivateKey(privateKey)) {
    throw new ConfigError(
      'TLS_KEY_FILE',
      `holds a private key that does not belong to the certificate in TLS_CERT_FILE (${keyFile}, ${certFile})`,
    );
  }
  return { cert, key };
}

/** The log levels pino knows, quietest last. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/** A host name (RFC 1123 labels) or an IPv4/IPv6 address, as HOST and WEBHOOK_ALLOWED_HOSTS name them. */
function isHostName(value: string): boolean {
  if (isIP(value)) return true;
  return (
    value.length <= 253 &&
    value.split('.').every((label) => /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(label))
  );
}

/**
 * DATA_DIR: a directory, or a path where one can be made. A regular file at the path or at one of its parents
 * is found here, naming the variable, rather than as an ENOTDIR from deep inside the store.
 */
function dataDir(env: NodeJS.ProcessEnv): string {
  const dir = resolve(env.DATA_DIR || './data');
  for (let path = dir; ; path = dirname(path)) {
    let isDirectory: boolean | undefined;
    try {
      isDirectory = statSync(path).isDirectory();
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code !== 'ENOENT') {
        if (code === 'ENOTDIR') continue;
        throw new ConfigError('DATA_DIR', `cannot be used: ${path} (${code ?? String(e)})`);
      }
    }
    if (isDirectory === false) {
      throw new ConfigError(
        'DATA_DIR',
        path === dir ? `is a file, not a directory: ${dir}` : `is below ${path}, which is a file, not a directory`,
      );
    }
    if (isDirectory || path === dirname(path)) return dir;
  }
}

/** A comma-separated list, each entry checked by `check` (which returns what is wrong, or undefined). */
function list(name: string, env: NodeJS.ProcessEnv, check: (entry: string) => string | undefined): string[] {
  const entries = (env[name] || '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const problem = check(entry);
    if (problem) throw new ConfigError(name, `has "${entry}": ${problem}`);
  }
  return entries;
}

function origin(entry: string): string | undefined {
  try {
    const u = new URL(entry);
    if ((u.protocol === 'http:' || u.protocol === 'https:') && u.origin === entry.replace(/\/+$/, '')) return undefined;
  } catch {
    // an unparseable entry: said below
  }
  return 'each entry must be an origin such as https://app.example.com (scheme, host and port only)';
}

function hostAndPort(entry: string): string | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:]+)(?::(\d{1,5}))?$/.exec(entry);
  const host = m?.[1]?.replace(/^\[|\]$/g, '');
  if (!m || !host || !isHostName(host) || (m[2] !== undefined && Number(m[2]) > 65535)) {
    return 'each entry must be host or host:port';
  }
  return undefined;
}

/** A value sent in an HTTP header (a bearer token, Basic credentials): `allowed` characters only, bounded. */
function headerSafe(
  name: string,
  value: string | undefined,
  minLength: number,
  allowed = { pattern: /^[\x21-\x7e]*$/, said: 'visible ASCII characters' },
): void {
  if (value === undefined || value === '') return;
  if (value.length < minLength || value.length > 200 || !allowed.pattern.test(value)) {
    const which = allowed.pattern.test(value) ? '' : ', some of them not allowed';
    throw new ConfigError(
      name,
      `must be ${minLength} to 200 ${allowed.said} (it has ${value.length} characters${which})`,
    );
  }
}

/** MCP_ALLOWED_HOSTS: comma-separated host names (no scheme, port or path; IPv6 in brackets). */
function mcpAllowedHosts(env: NodeJS.ProcessEnv): string[] {
  const names = (env.MCP_ALLOWED_HOSTS || '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  for (const name of names) {
    if (!/^(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?)$/.test(name)) {
      throw new ConfigError(
        'MCP_ALLOWED_HOSTS',
        `has "${name}": list host names only, comma-separated (no scheme, port or path; an IPv6 address in brackets)`,
      );
    }
  }
  return names;
}

/** The connect page's branding; a logo must be an https URL, the colour `#rrggbb` dark enough for white text. */
function connectBranding(env: NodeJS.ProcessEnv): Config['connectBranding'] {
  const productName = (env.CONNECT_PRODUCT_NAME ?? '').trim() || 'Agent connector service';
  if (productName.length > 80) throw new ConfigError('CONNECT_PRODUCT_NAME', 'must be at most 80 characters');
  const logo = (env.CONNECT_LOGO_URL ?? '').trim();
  if (logo) {
    let u: URL | undefined;
    try {
      u = new URL(logo);
    } catch {
      u = undefined;
    }
    if (!u || u.protocol !== 'https:' || logo.length > 2048)
      throw new ConfigError('CONNECT_LOGO_URL', `must be an https URL of at most 2048 characters, got "${logo}"`);
  }
  const colour = (env.CONNECT_PRIMARY_COLOUR ?? '').trim() || '#1f5fbf';
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(colour);
  if (!m) throw new ConfigError('CONNECT_PRIMARY_COLOUR', `must be a colour written #rrggbb, got "${colour}"`);
  // WCAG 2 contrast with the white text of the button: at least 4.5:1.
  const lin = (h: string) => {
    const c = parseInt(h, 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const lum = 0.2126 * lin(m[1]!) + 0.7152 * lin(m[2]!) + 0.0722 * lin(m[3]!);
  if (1.05 / (lum + 0.05) < 4.5)
    throw new ConfigError(
      'CONNECT_PRIMARY_COLOUR',
      `${colour} is too light for white text (WCAG contrast below 4.5:1)`,
    );
  return { productName, logoUrl: logo || null, primaryColour: colour.toLowerCase() };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = int('PORT', 8080, env, 65535);
  const host = env.HOST || '127.0.0.1';
  if (!isHostName(host)) {
    throw new ConfigError('HOST', `must be an IP address or a host name to listen on, got "${host}"`);
  }
  const logLevel = env.LOG_LEVEL || 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  if (env.ENCRYPTION_KEYS) {
    try {
      parseKeyList(env.ENCRYPTION_KEYS);
    } catch (e) {
      throw new ConfigError('ENCRYPTION_KEYS', (e as Error).message.replace(/^ENCRYPTION_KEYS:? ?/, ''));
    }
  }
  const trustProxy = env.TRUST_PROXY || '0';
  if (!['0', '1', 'true', 'false'].includes(trustProxy)) {
    throw new ConfigError(
      'TRUST_PROXY',
      `must be 1 (or true) behind a reverse proxy, 0 (or false) otherwise, got "${trustProxy}"`,
    );
  }
  const databasePoolSize = int('DATABASE_POOL_SIZE', 10, env, 1000);
  if (databasePoolSize < 1) throw new ConfigError('DATABASE_POOL_SIZE', 'must be at least 1 (connection)');
  const schema = env.DATABASE_SCHEMA || undefined;
  if (schema !== undefined && !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) {
    throw new ConfigError(
      'DATABASE_SCHEMA',
      `must be a PostgreSQL identifier (letters, digits and _, at most 63, not starting with a digit), got "${schema}"`,
    );
  }
  headerSafe('INITIAL_CLIENT_ID', env.INITIAL_CLIENT_ID, 1, {
    pattern: /^[\x21-\x39\x3b-\x7e]*$/,
    said: 'visible ASCII characters without ":"',
  });
  headerSafe('INITIAL_CLIENT_SECRET', env.INITIAL_CLIENT_SECRET, 24);
  headerSafe('METRICS_TOKEN', env.METRICS_TOKEN, 1, {
    pattern: /^[A-Za-z0-9\-._~+/]+=*$/,
    said: 'characters of a bearer token (letters, digits, -._~+/ and = at the end)',
  });
  const tls = loadTls(env);
  const derived = !env.PUBLIC_URL && port === 0;
  const publicUrl = derived
    ? ''
    : (env.PUBLIC_URL || `${tls ? 'https' : 'http'}://localhost:${port}`).replace(/\/+$/, '');
  if (!derived) {
    try {
      const u = new URL(publicUrl);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
    } catch {
      throw new ConfigError('PUBLIC_URL', `must be an http(s) URL, got "${publicUrl}"`);
    }
  }
  if (
    env.ADMIN_PASSWORD !== undefined &&
    env.ADMIN_PASSWORD !== '' &&
    env.ADMIN_PASSWORD.length < MIN_PASSWORD_LENGTH
  ) {
    throw new ConfigError(
      'ADMIN_PASSWORD',
      `must have at least ${MIN_PASSWORD_LENGTH} characters (it has ${env.ADMIN_PASSWORD.length})`,
    );
  }
  if (env.DATABASE_URL && !/^postgres(ql)?:\/\//.test(env.DATABASE_URL)) {
    throw new ConfigError('DATABASE_URL', 'must be a postgres:// or postgresql:// URL (unset it to use SQLite)');
  }
  const workers = env.WORKERS === 'auto' ? availableParallelism() : int('WORKERS', 1, env, 256) || 1;
  if (workers > 1 && !env.DATABASE_URL) {
    // Measured reasoning, not caution: what one process caches (connections, credential revocations, sessions) is
    // invalidated across processes by PostgreSQL's LISTEN/NOTIFY, which SQLite has no equivalent of, and SQLite
    // lets one writer at a time, so extra processes add lock waits rather than throughput on writes.
    throw new ConfigError(
      'WORKERS',
      `is ${env.WORKERS}: several worker processes need PostgreSQL (set DATABASE_URL), or set WORKERS=1 to use SQLite`,
    );
  }
  const headersTimeoutMs = int('HEADERS_TIMEOUT_MS', 15_000, env);
  const requestTimeoutMs = int('REQUEST_TIMEOUT_MS', 30 * 60_000, env);
  if (requestTimeoutMs > 0 && headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(
      'HEADERS_TIMEOUT_MS',
      `is ${headersTimeoutMs}: it must be at most REQUEST_TIMEOUT_MS (${requestTimeoutMs}), since the headers are part of the request`,
    );
  }
  return {
    workers,
    port,
    host,
    publicUrl,
    dataDir: dataDir(env),
    databaseUrl: env.DATABASE_URL || undefined,
    databaseSchema: schema,
    databasePoolSize,
    encryptionKeys: env.ENCRYPTION_KEYS || undefined,
    tokenTtlSeconds: int('TOKEN_TTL_SECONDS', 900, env),
    linkTtlSeconds: int('LINK_TTL_SECONDS', 3600, env),
    allowedRedirectOrigins: list('ALLOWED_REDIRECT_ORIGINS', env, origin).map((s) => s.replace(/\/+$/, '')),
    connectBranding: connectBranding(env),
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 1024 * 1024, env),
    bodyIdleTimeoutMs: int('BODY_IDLE_TIMEOUT_MS', 10_000, env),
    headersTimeoutMs,
    requestTimeoutMs,
    toolResponseLimitBytes: int('TOOL_RESPONSE_LIMIT_BYTES', 10 * 1024 * 1024, env),
    toolAnswerBudgetTokens: answerBudget(env),
    upstreamTimeoutMaxMs: int('UPSTREAM_TIMEOUT_MAX_MS', 0, env),
    refreshMarginSeconds: int('REFRESH_MARGIN_SECONDS', 300, env),
    refreshPacing: {
      concurrency: int('REFRESH_PACED_CONCURRENCY', 4, env, 10_000) || 4,
      queue: int('REFRESH_PACED_QUEUE', 256, env, 100_000),
    },
    logLevel,
    initialClientId: env.INITIAL_CLIENT_ID || undefined,
    initialClientSecret: env.INITIAL_CLIENT_SECRET || undefined,
    adminPassword: env.ADMIN_PASSWORD || undefined,
    dashboardSessionTtlSeconds: int('DASHBOARD_SESSION_TTL_SECONDS', 8 * 3600, env) || 8 * 3600,
    trustProxy: trustProxy === '1' || trustProxy === 'true',
    shutdownGraceSeconds: int('SHUTDOWN_GRACE_SECONDS', 30, env),
    metricsToken: env.METRICS_TOKEN || undefined,
    webhookAllowedHosts: list('WEBHOOK_ALLOWED_HOSTS', env, hostAndPort),
    mcpAllowedHosts: mcpAllowedHosts(env),
    upstreamAllowedHosts: list('UPSTREAM_ALLOWED_HOSTS', env, hostAndPort),
    auditRetentionDays: int('AUDIT_RETENTION_DAYS', 365, env, 36_500),
    webhookRetryBaseMs: int('WEBHOOK_RETRY_BASE_MS', 5_000, env) || 5_000,
    keepAliveTimeoutMs: int('KEEP_ALIVE_TIMEOUT_MS', 65_000, env) || 65_000,
    http2MaxSessionsPerClient: int('HTTP2_MAX_SESSIONS_PER_CLIENT', 64, env, 100_000) || 64,
    tls,
    caches: {
      accounts: int('ACCOUNT_CACHE_SIZE', 10_000, env) || 10_000,
      connections: int('CONNECTION_CACHE_SIZE', 10_000, env) || 10_000,
      secrets: int('SECRET_CACHE_SIZE', 10_000, env) || 10_000,
      secretsTtlMs: (int('SECRET_CACHE_TTL_SECONDS', 300, env) || 300) * 1000,
      tokens: int('TOKEN_CACHE_SIZE', 10_000, env) || 10_000,
      hosts: int('HOST_CACHE_SIZE', 10_000, env) || 10_000,
      mcpSessions: int('MCP_SESSION_CACHE_SIZE', 1_000, env) || 1_000,
    },
    batchSize: int('BATCH_SIZE', 500, env, 5_000) || 500,
    triggers: triggerSettings(env),
    mcpOAuth: mcpOAuthSettings(env),
    dashboardOidc: dashboardOidcSettings(env),
  };
}
