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
  toolResponseLimitBytes: number;
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
}

function int(name: string, fallback: number, env: NodeJS.ProcessEnv): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return n;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = int('PORT', 8080, env);
  const host = env.HOST || '127.0.0.1';
  const derived = !env.PUBLIC_URL && port === 0;
  const publicUrl = derived ? '' : (env.PUBLIC_URL || `http://localhost:${port}`).replace(/\/+$/, '');
  if (!derived) {
    try {
      const u = new URL(publicUrl);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
    } catch {
      throw new Error(`PUBLIC_URL must be an http(s) URL, got "${publicUrl}"`);
    }
  }
  return {
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
    toolResponseLimitBytes: int('TOOL_RESPONSE_LIMIT_BYTES', 10 * 1024 * 1024, env),
    upstreamTimeoutMaxMs: int('UPSTREAM_TIMEOUT_MAX_MS', 0, env),
    refreshMarginSeconds: int('REFRESH_MARGIN_SECONDS', 300, env),
    logLevel: env.LOG_LEVEL || 'info',
    initialClientId: env.INITIAL_CLIENT_ID || undefined,
    initialClientSecret: env.INITIAL_CLIENT_SECRET || undefined,
    adminPassword: env.ADMIN_PASSWORD || undefined,
    dashboardSessionTtlSeconds: int('DASHBOARD_SESSION_TTL_SECONDS', 8 * 3600, env) || 8 * 3600,
    trustProxy: env.TRUST_PROXY === '1' || env.TRUST_PROXY === 'true',
  };
}
