/**
 * `npm run keys -- rotate-signing` (issue 12, "no command replaces the service's token-signing key"): the command,
 * run as its own process against a running service's store, replaces the key that signs the service's bearer
 * tokens. Tokens signed before keep working until they expire; with `--revoke-old` they are refused at once; new
 * tokens are signed with the new key; every instance on the store follows without a restart (PostgreSQL: two
 * instances, LISTEN/NOTIFY; SQLite: PRAGMA data_version).
 */
import { execFile } from 'node:child_process';
import { Writable } from 'node:stream';
import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PG_URL,
  serviceEnv,
  startHarness,
  TEST_CLIENT_ID,
  TEST_CLIENT_SECRET,
  type Harness,
} from '../helpers/harness.ts';
import { loadConfig } from '../../runtime/config.ts';
import { startServer, type RunningServer } from '../../runtime/server.ts';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import { rotateSigningKey, SIGNING_KEY_META } from '../../runtime/auth/signing-keys.ts';
import { aad } from '../../runtime/crypto/aad.ts';
import type { Store } from '../../runtime/store/types.ts';

async function issueToken(url: string): Promise<string> {
  const res = await fetch(`${url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: TEST_CLIENT_ID,
      client_secret: TEST_CLIENT_SECRET,
    }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** An authenticated call: its status, and the error message when refused. */
async function use(url: string, token: string): Promise<{ status: number; message?: string }> {
  const res = await fetch(`${url}/v1/connections`, { headers: { authorization: `Bearer ${token}` } });
  const body = (await res.json()) as { error?: { message: string } };
  return { status: res.status, message: body.error?.message };
}

/** `npm run keys -- <args>` as its own process, with the service's configuration. */
function keys(env: Record<string, string>, ...args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      'npm',
      ['run', '--silent', 'keys', '--', ...args],
      { cwd: process.cwd(), env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

const kidOf = (token: string) => decodeProtectedHeader(token).kid;

/**
 * The scenario on every instance given: a token from before the rotation still works after it, a new token is
 * signed with the new key and works everywhere; after `--revoke-old` both earlier tokens get 401 everywhere while
 * a token issued after works.
 */
async function rotationScenario(urls: string[], env: Record<string, string>, stores: Store[]): Promise<void> {
  // Once every change committed before has reached each instance (PostgreSQL: its LISTEN connection heard the
  // notification; SQLite: nothing to wait for, each call checks PRAGMA data_version).
  const heard = () => Promise.all(stores.map((s) => s.changes.sync()));
  const before = await issueToken(urls[0]!);
  for (const url of urls) expect(await use(url, before)).toEqual({ status: 200 });

  const rotated = await keys(env, 'rotate-signing');
  expect(rotated.out).toMatch(/token-signing key \S+ is active/);
  expect(rotated.code).toBe(0);
  expect(rotated.out).toContain(`${kidOf(before)}: tokens it signed keep working until`);
  await heard();

  for (const url of urls) expect(await use(url, before)).toEqual({ status: 200 });
  const afterRotation = await Promise.all(urls.map((url) => issueToken(url)));
  for (const token of afterRotation) {
    expect(kidOf(token)).not.toBe(kidOf(before));
    for (const url of urls) expect(await use(url, token)).toEqual({ status: 200 });
  }

  const revoked = await keys(env, 'rotate-signing', '--revoke-old');
  expect(revoked.code).toBe(0);
  expect(revoked.out).toMatch(/revoked: tokens it signed are refused from now on/);
  await heard();
  for (const token of [before, ...afterRotation])
    for (const url of urls)
      expect(await use(url, token)).toEqual({
        status: 401,
        message: expect.stringMatching(/signed with a key this service no longer accepts/) as string,
      });
  for (const url of urls) {
    const fresh = await issueToken(url);
    for (const other of urls) expect(await use(other, fresh)).toEqual({ status: 200 });
  }
}

describe('rotate-signing on PostgreSQL, two instances', () => {
  let a: Harness;
  let b: RunningServer;
  let schema: string;

  beforeAll(async () => {
    a = await startHarness({ store: 'postgres' });
    schema = (a.running.services.store as PostgresStore).schema!;
    // Behind one load balancer: the same public URL, which is the tokens' issuer.
    b = await startServer(loadConfig({ ...serviceEnv(a.dataDir), PUBLIC_URL: a.url }), {
      logDestination: new Writable({ write: (_c, _e, cb) => cb() }),
      store: new PostgresStore(PG_URL, schema),
    });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('old tokens work until they expire, --revoke-old refuses them at once, both instances follow', async () => {
    await rotationScenario([a.url, b.url], { DATA_DIR: a.dataDir, DATABASE_URL: PG_URL, DATABASE_SCHEMA: schema }, [
      a.running.services.store,
      b.services.store,
    ]);
  });
});

describe('rotate-signing on SQLite', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('old tokens work until they expire, --revoke-old refuses them at once, the running service follows', async () => {
    await rotationScenario([h.url], { DATA_DIR: h.dataDir }, []);
  });

  it('refuses an unknown option and names it', async () => {
    const r = await keys({ DATA_DIR: h.dataDir }, 'rotate-signing', '--revoke-all');
    expect(r.code).toBe(1);
    expect(r.out).toContain('rotate-signing takes one option, --revoke-old; got: --revoke-all');
  });

  it('a replaced key stops verifying at its retirement time, and is dropped by the next rotation', async () => {
    const { store, sealer } = h.running.services;
    const before = await issueToken(h.url);
    const retiring = await rotateSigningKey(store, sealer, {
      now: Date.now(),
      maxTokenLifetimeMs: 300,
      revokeOld: false,
    });
    expect(retiring.kept.map((k) => k.kid)).toContain(kidOf(before));
    expect(await use(h.url, before)).toEqual({ status: 200 });
    await new Promise((r) => setTimeout(r, 400));
    expect(await use(h.url, before)).toMatchObject({ status: 401 });
    const next = await rotateSigningKey(store, sealer, {
      now: Date.now(),
      maxTokenLifetimeMs: 60_000,
      revokeOld: false,
    });
    expect(next.dropped).toEqual([kidOf(before)]);
    expect(next.kept.map((k) => k.kid)).toEqual([retiring.active]);
  });

  it('reads a signing key stored before rotation existed and keeps verifying the tokens it signed', async () => {
    const { store, sealer } = h.running.services;
    // The stored form of earlier versions: the bare key, sealed; their tokens carry no kid.
    const legacyKey = Buffer.alloc(32, 7).toString('base64');
    await store.setMeta(SIGNING_KEY_META, sealer.seal(legacyKey, aad.meta(SIGNING_KEY_META)));
    const { SignJWT } = await import('jose');
    const legacyToken = await new SignJWT({ cid: TEST_CLIENT_ID })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject((await store.getApiCredentialByClientId(TEST_CLIENT_ID))!.id)
      .setIssuer(h.config.publicUrl)
      .setAudience('agent-connector-service')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(Buffer.from(legacyKey, 'base64'));
    expect(await use(h.url, legacyToken)).toEqual({ status: 200 });
    const rotated = await keys({ DATA_DIR: h.dataDir }, 'rotate-signing');
    expect(rotated.out).toContain('initial: tokens it signed keep working until');
    expect(await use(h.url, legacyToken)).toEqual({ status: 200 });
    expect(await use(h.url, await issueToken(h.url))).toEqual({ status: 200 });
  });
});
