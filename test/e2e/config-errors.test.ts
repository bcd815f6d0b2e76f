/**
 * Every setting of the configuration table (docs/configuration.md), given a bad value, stops the start with one
 * line naming the variable and what is wrong — never a stack trace (issue 36, item 6).
 *
 * The table below holds a bad value for every variable; the test fails when docs/configuration.md lists a variable
 * the table has no row for, or runtime/config.ts reads one the docs do not list. Each row is checked through the
 * same code `npm start` runs (loadConfig, then describeStartupError); the rows the issue names, and those whose
 * problem only shows once the service starts (an address, a directory, a database), also in a real service process.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../runtime/config.ts';
import { describeStartupError } from '../../runtime/startup-errors.ts';
import { createTestCa } from '../helpers/test-ca.ts';

const scratch = mkdtempSync(join(tmpdir(), 'acs-config-errors-'));
const aFile = join(scratch, 'a-file');
writeFileSync(aFile, 'not a directory\n');
const ca = createTestCa();
afterAll(() => {
  ca.remove();
  rmSync(scratch, { recursive: true, force: true });
});

interface Row {
  variable: string;
  value: string;
  /** What the one line must say after the variable's name. */
  says: RegExp;
  /** Other settings the case needs. */
  with?: Record<string, string>;
  /** 'start': the problem shows only when the service starts (checked in a real process only). */
  at?: 'start';
  /** Also checked in a real service process. */
  process?: true;
}

const rows: Row[] = [
  { variable: 'PORT', value: '80a', says: /must be a whole number from 0 to 65535, got "80a"/ },
  { variable: 'PORT', value: '70000', says: /must be a whole number from 0 to 65535/ },
  { variable: 'HOST', value: 'http://0.0.0.0', says: /must be an IP address or a host name to listen on/ },
  {
    variable: 'HOST',
    value: 'not-a-host.invalid',
    says: /"not-a-host.invalid" does not resolve to an address/,
    at: 'start',
  },
  { variable: 'HOST', value: '192.0.2.1', says: /"192.0.2.1" is not an address of this machine/, at: 'start' },
  { variable: 'PUBLIC_URL', value: 'ftp://example.com', says: /must be an http\(s\) URL/ },
  { variable: 'TLS_CERT_FILE', value: aFile, says: /is not a PEM certificate/, with: { TLS_KEY_FILE: 'KEY' } },
  {
    variable: 'TLS_KEY_FILE',
    value: aFile,
    says: /is not an unencrypted PEM private key/,
    with: { TLS_CERT_FILE: 'CERT' },
  },
  { variable: 'DATA_DIR', value: join(aFile, 'data'), says: /is below .*a-file, which is a file/, process: true },
  { variable: 'DATA_DIR', value: aFile, says: /is a file, not a directory/ },
  { variable: 'DATABASE_URL', value: 'mysql://db/acs', says: /must be a postgres:\/\/ or postgresql:\/\/ URL/ },
  {
    variable: 'DATABASE_URL',
    value: 'postgres://postgres:hunter2hunter2@127.0.0.1:1/test',
    says: /cannot use PostgreSQL at postgres:\/\/postgres:\*\*\*@127.0.0.1:1\/test: nothing is listening there/,
    at: 'start',
  },
  { variable: 'DATABASE_SCHEMA', value: 'acs; drop table x', says: /must be a PostgreSQL identifier/ },
  { variable: 'DATABASE_POOL_SIZE', value: '0', says: /must be at least 1/ },
  { variable: 'ENCRYPTION_KEYS', value: 'foo', says: /must look like "kid:base64key/, process: true },
  { variable: 'ENCRYPTION_KEYS', value: 'k1:c2hvcnQ=', says: /key "k1" must decode to 32 bytes, got 5/ },
  { variable: 'TOKEN_TTL_SECONDS', value: '15m', says: /must be a whole number/ },
  { variable: 'LINK_TTL_SECONDS', value: '-1', says: /must be a whole number/ },
  { variable: 'ALLOWED_REDIRECT_ORIGINS', value: 'https://app.example.com/back', says: /must be an origin/ },
  { variable: 'BODY_LIMIT_BYTES', value: '1MB', says: /must be a whole number/ },
  { variable: 'BODY_IDLE_TIMEOUT_MS', value: '1.5', says: /must be a whole number/ },
  {
    variable: 'HEADERS_TIMEOUT_MS',
    value: '20000',
    says: /must be at most REQUEST_TIMEOUT_MS/,
    with: { REQUEST_TIMEOUT_MS: '10000' },
  },
  { variable: 'REQUEST_TIMEOUT_MS', value: 'forever', says: /must be a whole number/ },
  { variable: 'KEEP_ALIVE_TIMEOUT_MS', value: '65s', says: /must be a whole number/ },
  { variable: 'HTTP2_MAX_SESSIONS_PER_CLIENT', value: '1000000', says: /from 0 to 100000/ },
  { variable: 'TOOL_RESPONSE_LIMIT_BYTES', value: '10e6', says: /must be a whole number/ },
  { variable: 'TOOL_ANSWER_BUDGET_TOKENS', value: '100', says: /is 100: it must be at least 500/ },
  { variable: 'UPSTREAM_TIMEOUT_MAX_MS', value: 'none', says: /must be a whole number/ },
  { variable: 'REFRESH_MARGIN_SECONDS', value: '5 minutes', says: /must be a whole number/ },
  { variable: 'REFRESH_PACED_CONCURRENCY', value: '20000', says: /from 0 to 10000/ },
  { variable: 'REFRESH_PACED_QUEUE', value: '-1', says: /must be a whole number/ },
  {
    variable: 'LOG_LEVEL',
    value: 'loud',
    says: /must be one of trace, debug, info, warn, error, fatal, silent, got "loud"/,
    process: true,
  },
  { variable: 'INITIAL_CLIENT_ID', value: 'has:colon', says: /visible ASCII characters without ":"/ },
  { variable: 'INITIAL_CLIENT_SECRET', value: 'too-short', says: /must be 24 to 200 visible ASCII characters/ },
  { variable: 'ADMIN_PASSWORD', value: 'short', says: /must have at least 12 characters/ },
  { variable: 'DASHBOARD_SESSION_TTL_SECONDS', value: '8h', says: /must be a whole number/ },
  { variable: 'TRUST_PROXY', value: 'yes', says: /must be 1 \(or true\) behind a reverse proxy/ },
  { variable: 'WORKERS', value: '2', says: /several worker processes need PostgreSQL/ },
  { variable: 'WORKERS', value: 'many', says: /must be a whole number from 0 to 256/ },
  { variable: 'SHUTDOWN_GRACE_SECONDS', value: '30s', says: /must be a whole number/ },
  { variable: 'METRICS_TOKEN', value: 'two words', says: /characters of a bearer token/ },
  {
    variable: 'WEBHOOK_ALLOWED_HOSTS',
    value: 'hooks.internal,http://x',
    says: /has "http:\/\/x": each entry must be host or host:port/,
  },
  {
    variable: 'UPSTREAM_ALLOWED_HOSTS',
    value: '10.0.0.5,http://x',
    says: /has "http:\/\/x": each entry must be host or host:port/,
  },
  { variable: 'AUDIT_RETENTION_DAYS', value: '1y', says: /must be a whole number/ },
  { variable: 'TRIGGER_MIN_INTERVAL_SECONDS', value: '0', says: /must be at least 1/ },
  { variable: 'TRIGGER_CONCURRENCY', value: 'many', says: /must be a whole number/ },
  { variable: 'TRIGGER_PROVIDER_CONCURRENCY', value: '0', says: /must be at least 1/ },
  { variable: 'TRIGGER_LEASE_SECONDS', value: '5m', says: /must be a whole number/ },
  { variable: 'TRIGGER_POLLER', value: 'yes', says: /must be 0 or 1/ },
  { variable: 'TRIGGER_INGRESS_MAX_BYTES', value: '100', says: /must be at least 1024/ },
  { variable: 'TRIGGER_INGRESS_MAX_PENDING', value: '0', says: /must be at least 1/ },
  { variable: 'CONNECT_PRODUCT_NAME', value: 'x'.repeat(81), says: /must be at most 80 characters/ },
  { variable: 'CONNECT_LOGO_URL', value: 'http://logo.example/l.png', says: /must be an https URL/ },
  { variable: 'CONNECT_PRIMARY_COLOUR', value: '#ffff00', says: /too light for white text/ },
  {
    variable: 'MCP_ALLOWED_HOSTS',
    value: 'mcp.example.com,https://x',
    says: /has "https:\/\/x": list host names only/,
  },
  { variable: 'MCP_OAUTH_ACCESS_TOKEN_TTL_SECONDS', value: '1h', says: /must be a whole number from 0 to 86400/ },
  {
    variable: 'MCP_OAUTH_REFRESH_TOKEN_TTL_SECONDS',
    value: '99999999',
    says: /must be a whole number from 0 to 31536000/,
  },
  {
    variable: 'MCP_OAUTH_OIDC_ISSUER',
    value: 'ftp://idp.example',
    says: /must be an https URL/,
    with: { MCP_OAUTH_OIDC_CLIENT_ID: 'c' },
  },
  {
    variable: 'MCP_OAUTH_OIDC_ISSUER',
    value: 'https://idp.example/?tenant=1',
    says: /must have no query or fragment/,
    with: { MCP_OAUTH_OIDC_CLIENT_ID: 'c' },
  },
  {
    variable: 'MCP_OAUTH_OIDC_CLIENT_ID',
    value: '',
    says: /is required when MCP_OAUTH_OIDC_ISSUER is set/,
    with: { MCP_OAUTH_OIDC_ISSUER: 'https://idp.example' },
  },
  {
    variable: 'MCP_OAUTH_OIDC_ISSUER',
    value: '',
    says: /is required when MCP_OAUTH_OIDC_CLIENT_ID or _CLIENT_SECRET is set/,
    with: { MCP_OAUTH_OIDC_CLIENT_ID: 'c' },
  },
  {
    variable: 'DASHBOARD_OIDC_ISSUER',
    value: 'ftp://idp.example',
    says: /must be an https URL/,
    with: { DASHBOARD_OIDC_CLIENT_ID: 'c', DASHBOARD_OIDC_DEFAULT_ROLE: 'viewer' },
  },
  {
    variable: 'DASHBOARD_OIDC_ISSUER',
    value: '',
    says: /is required when DASHBOARD_OIDC_CLIENT_ID or _CLIENT_SECRET is set/,
    with: { DASHBOARD_OIDC_CLIENT_ID: 'c' },
  },
  {
    variable: 'DASHBOARD_OIDC_CLIENT_ID',
    value: '',
    says: /is required when DASHBOARD_OIDC_ISSUER is set/,
    with: { DASHBOARD_OIDC_ISSUER: 'https://idp.example', DASHBOARD_OIDC_DEFAULT_ROLE: 'viewer' },
  },
  {
    variable: 'DASHBOARD_OIDC_CLIENT_SECRET',
    value: 'has space',
    says: /visible ASCII characters/,
    with: {
      DASHBOARD_OIDC_ISSUER: 'https://idp.example',
      DASHBOARD_OIDC_CLIENT_ID: 'c',
      DASHBOARD_OIDC_DEFAULT_ROLE: 'viewer',
    },
  },
  {
    variable: 'DASHBOARD_OIDC_NAME',
    value: 'x'.repeat(61),
    says: /must be at most 60 characters/,
    with: {
      DASHBOARD_OIDC_ISSUER: 'https://idp.example',
      DASHBOARD_OIDC_CLIENT_ID: 'c',
      DASHBOARD_OIDC_DEFAULT_ROLE: 'viewer',
    },
  },
  {
    variable: 'DASHBOARD_OIDC_ALLOWED_DOMAINS',
    value: 'acme.example,@acme.example',
    says: /has "@acme.example": each entry must be an e-mail domain/,
    with: {
      DASHBOARD_OIDC_ISSUER: 'https://idp.example',
      DASHBOARD_OIDC_CLIENT_ID: 'c',
      DASHBOARD_OIDC_DEFAULT_ROLE: 'viewer',
    },
  },
  {
    variable: 'DASHBOARD_OIDC_GROUPS_CLAIM',
    value: 'has space',
    says: /must be a claim name/,
    with: {
      DASHBOARD_OIDC_ISSUER: 'https://idp.example',
      DASHBOARD_OIDC_CLIENT_ID: 'c',
      DASHBOARD_OIDC_DEFAULT_ROLE: 'viewer',
    },
  },
  {
    variable: 'DASHBOARD_OIDC_ROLES',
    value: 'admins:root',
    says: /has "admins:root": the role must be admin, operator or viewer/,
    with: {
      DASHBOARD_OIDC_ISSUER: 'https://idp.example',
      DASHBOARD_OIDC_CLIENT_ID: 'c',
      DASHBOARD_OIDC_DEFAULT_ROLE: 'viewer',
    },
  },
  {
    variable: 'DASHBOARD_OIDC_ROLES',
    value: '',
    says: /is required when DASHBOARD_OIDC_ISSUER is set and DASHBOARD_OIDC_DEFAULT_ROLE is none/,
    with: { DASHBOARD_OIDC_ISSUER: 'https://idp.example', DASHBOARD_OIDC_CLIENT_ID: 'c' },
  },
  {
    variable: 'DASHBOARD_OIDC_DEFAULT_ROLE',
    value: 'superuser',
    says: /must be admin, operator, viewer or none/,
    with: { DASHBOARD_OIDC_ISSUER: 'https://idp.example', DASHBOARD_OIDC_CLIENT_ID: 'c' },
  },
  {
    variable: 'MCP_OAUTH_OIDC_CLIENT_SECRET',
    value: 'has space',
    says: /visible ASCII characters/,
    with: { MCP_OAUTH_OIDC_ISSUER: 'https://idp.example', MCP_OAUTH_OIDC_CLIENT_ID: 'c' },
  },
  { variable: 'MCP_OAUTH_OIDC_IDENTIFIER_CLAIM', value: 'a b', says: /must be a claim name/ },
  { variable: 'WEBHOOK_RETRY_BASE_MS', value: '5s', says: /must be a whole number/ },
  { variable: 'ACCOUNT_CACHE_SIZE', value: 'big', says: /must be a whole number/ },
  { variable: 'CONNECTION_CACHE_SIZE', value: '1e4', says: /must be a whole number/ },
  { variable: 'SECRET_CACHE_SIZE', value: '-5', says: /must be a whole number/ },
  { variable: 'SECRET_CACHE_TTL_SECONDS', value: '5m', says: /must be a whole number/ },
  { variable: 'TOKEN_CACHE_SIZE', value: 'x', says: /must be a whole number/ },
  { variable: 'HOST_CACHE_SIZE', value: '10 000', says: /must be a whole number/ },
  { variable: 'MCP_SESSION_CACHE_SIZE', value: 'lots', says: /must be a whole number/ },
  { variable: 'BATCH_SIZE', value: '10000', says: /from 0 to 5000/ },
];

/** The certificate and key of the test CA stand in for 'CERT' and 'KEY' (a valid partner for the bad file). */
function envOf(row: Row): Record<string, string> {
  const extra = Object.fromEntries(
    Object.entries(row.with ?? {}).map(([k, v]) => [k, v === 'CERT' ? ca.certFile : v === 'KEY' ? ca.keyFile : v]),
  );
  return { PORT: '0', DATA_DIR: join(scratch, 'data'), ...extra, [row.variable]: row.value };
}

function documentedVariables(): string[] {
  const page = readFileSync('docs/configuration.md', 'utf8');
  return [...page.matchAll(/^\| `([A-Z][A-Z0-9_]+)`/gm)].map((m) => m[1]!);
}

describe('the configuration table and its bad values', () => {
  it('has a bad value for every documented variable, and documents every variable runtime/config.ts reads', () => {
    const documented = documentedVariables();
    expect(documented.length).toBeGreaterThan(0);
    const tested = new Set(rows.map((r) => r.variable));
    expect(documented.filter((v) => !tested.has(v))).toEqual([]);
    expect([...tested].filter((v) => !documented.includes(v))).toEqual([]);
    const source = readFileSync('runtime/config.ts', 'utf8');
    const read = new Set(
      [...source.matchAll(/env\.([A-Z][A-Z0-9_]+)|\(\s*'([A-Z][A-Z0-9_]+)',\s*(?:env|\d)/g)].map((m) => m[1] ?? m[2]!),
    );
    expect(read.size).toBeGreaterThan(30);
    expect([...read].filter((v) => !documented.includes(v))).toEqual([]);
  });

  it.each(rows.filter((r) => r.at !== 'start').map((r) => [`${r.variable}=${r.value}`, r] as const))(
    '%s is refused with one line naming the variable',
    (_name, row) => {
      const env = envOf(row);
      let error: unknown;
      try {
        loadConfig(env);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).variable).toBe(row.variable);
      const line = describeStartupError(error, env);
      expect(line).toBeDefined();
      expect(line).not.toContain('\n');
      expect(line).toMatch(new RegExp(`^${row.variable}[ :]`));
      expect(line).toMatch(row.says);
    },
  );
});

/** Starts the service as `npm run dev` does, with exactly `env`; resolves with its exit code and stderr. */
function startService(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', 'runtime/main.ts'], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    proc.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    proc.once('exit', (code) => resolve({ code, stderr }));
  });
}

describe('a real service given a bad setting', () => {
  it.each(rows.filter((r) => r.at === 'start' || r.process).map((r) => [`${r.variable}=${r.value}`, r] as const))(
    '%s: exit 1, one line on stderr naming the variable, no stack trace',
    async (_name, row) => {
      const env = envOf(row);
      mkdirSync(join(scratch, 'data'), { recursive: true });
      const { code, stderr } = await startService(env);
      expect(stderr).not.toMatch(/^\s+at /m);
      expect(stderr.trim().split('\n')).toHaveLength(1);
      expect(stderr.trim()).toMatch(new RegExp(`^agent connector service cannot start: ${row.variable}[ :]`));
      expect(stderr).toMatch(row.says);
      expect(code).toBe(1);
    },
  );
});
