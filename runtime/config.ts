import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';

/** Service configuration, read once from environment variables (documented in the README). */
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
  /** "kid:base64key,kid2:base64key" — the first is used for new writes. Else a key file under dataDir. */
  encryptionKeys?: string;
  tokenTtlSeconds: number;
  linkTtlSeconds: number;
  /** Origins a client may send users back to after authorization (besides the service itself). */
  allowedRedirectOrigins: string[];
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

/** A comma-separated list of `host` or `host:port` entries; a bad entry is refused naming the setting. */
function hostList(name: string, env: NodeJS.ProcessEnv): string[] {
  const list = (env[name] || '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const entry of list) {
    if (!/^(\[[0-9a-fA-F:.]+\]|[^\s/:@?#[\]]+)(:\d{1,5})?$/.test(entry))
      throw new ConfigError(
        name,
        `must be a comma-separated list of host or host:port (such as "10.0.0.5,api.internal:8443"); "${entry}" is not one`,
      );
  }
  return list;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = int('PORT', 8080, env, 65535);
  const host = env.HOST || '127.0.0.1';
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
    dataDir: resolve(env.DATA_DIR || './data'),
    databaseUrl: env.DATABASE_URL || undefined,
    encryptionKeys: env.ENCRYPTION_KEYS || undefined,
    tokenTtlSeconds: int('TOKEN_TTL_SECONDS', 900, env),
    linkTtlSeconds: int('LINK_TTL_SECONDS', 3600, env),
    allowedRedirectOrigins: (env.ALLOWED_REDIRECT_ORIGINS || '')
      .split(',')
      .map((s) => s.trim().replace(/\/+$/, ''))
      .filter(Boolean),
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 1024 * 1024, env),
    bodyIdleTimeoutMs: int('BODY_IDLE_TIMEOUT_MS', 10_000, env),
    headersTimeoutMs,
    requestTimeoutMs,
    toolResponseLimitBytes: int('TOOL_RESPONSE_LIMIT_BYTES', 10 * 1024 * 1024, env),
    toolAnswerBudgetTokens: answerBudget(env),
    upstreamTimeoutMaxMs: int('UPSTREAM_TIMEOUT_MAX_MS', 0, env),
    refreshMarginSeconds: int('REFRESH_MARGIN_SECONDS', 300, env),
    logLevel: env.LOG_LEVEL || 'info',
    initialClientId: env.INITIAL_CLIENT_ID || undefined,
    initialClientSecret: env.INITIAL_CLIENT_SECRET || undefined,
    adminPassword: env.ADMIN_PASSWORD || undefined,
    dashboardSessionTtlSeconds: int('DASHBOARD_SESSION_TTL_SECONDS', 8 * 3600, env) || 8 * 3600,
    trustProxy: env.TRUST_PROXY === '1' || env.TRUST_PROXY === 'true',
    shutdownGraceSeconds: int('SHUTDOWN_GRACE_SECONDS', 30, env),
    metricsToken: env.METRICS_TOKEN || undefined,
    webhookAllowedHosts: (env.WEBHOOK_ALLOWED_HOSTS || '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    upstreamAllowedHosts: hostList('UPSTREAM_ALLOWED_HOSTS', env),
    auditRetentionDays: int('AUDIT_RETENTION_DAYS', 365, env, 36_500),
    webhookRetryBaseMs: int('WEBHOOK_RETRY_BASE_MS', 5_000, env) || 5_000,
    keepAliveTimeoutMs: int('KEEP_ALIVE_TIMEOUT_MS', 65_000, env) || 65_000,
    http2MaxSessionsPerClient: int('HTTP2_MAX_SESSIONS_PER_CLIENT', 64, env, 100_000) || 64,
    tls,
    caches: {
      accounts: int('ACCOUNT_CACHE_SIZE', 20_000, env) || 20_000,
      connections: int('CONNECTION_CACHE_SIZE', 10_000, env) || 10_000,
      secrets: int('SECRET_CACHE_SIZE', 10_000, env) || 10_000,
      secretsTtlMs: (int('SECRET_CACHE_TTL_SECONDS', 300, env) || 300) * 1000,
      tokens: int('TOKEN_CACHE_SIZE', 10_000, env) || 10_000,
      hosts: int('HOST_CACHE_SIZE', 10_000, env) || 10_000,
      mcpSessions: int('MCP_SESSION_CACHE_SIZE', 1_000, env) || 1_000,
    },
    batchSize: int('BATCH_SIZE', 500, env, 5_000) || 500,
  };
}
