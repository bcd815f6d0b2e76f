/**
 * Attacks on the service's own authentication (group "service auth"), beyond test/e2e/service-auth.test.ts:
 * forged bearer tokens of every classic kind (wrong issuer or audience, alg none in any case, other HMAC
 * algorithms with the real key, RS256/ES256 with an embedded or remote key, HMAC keyed with public material,
 * kid injection, crit, stripped or re-used signatures), revocation seen by a second instance sharing the
 * store within its revocation cache window, brute force on /oauth/token throttled per client id (across
 * addresses) and per address (whatever X-Forwarded-For says), and the constant-time secret check.
 */
import crypto, { createHash, createHmac, generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import { syncBuiltinESMExports } from 'node:module';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { exportJWK, SignJWT } from 'jose';
import { startHarness, TEST_CLIENT_ID, TEST_CLIENT_SECRET, type Harness } from '../helpers/harness.ts';
import { loadConfig } from '../../runtime/config.ts';
import { startServer, type RunningServer } from '../../runtime/server.ts';
import { TOKEN_AUDIENCE } from '../../runtime/auth/service-auth.ts';
import { openKeySet, SIGNING_KEY_META } from '../../runtime/auth/signing-keys.ts';
import { Sentinel } from './sentinel.ts';
import { record, tallied, type Tally } from './summary.ts';

let h: Harness;
let second: RunningServer | undefined;
let keyServer: Sentinel;
const tally: Tally = { tried: 0, failed: 0 };

beforeAll(async () => {
  h = await startHarness({ env: { TOKEN_TTL_SECONDS: '600', LOG_LEVEL: 'warn' } });
  keyServer = await new Sentinel().start();
});
afterEach(() => {
  vi.restoreAllMocks();
});
afterAll(async () => {
  record({
    category: 'attacks tried',
    what: 'service auth: forged tokens, revocation across instances, brute force, constant-time check',
    tried: tally.tried,
    failed: tally.failed,
  });
  await second?.close();
  await keyServer?.close();
  await h?.close();
});

const attack = (n: number, fn: () => Promise<void>) => tallied(tally, n, fn);

/** POST /oauth/token from a chosen local address (the whole of 127/8 is loopback), as a form. */
function tokenRequest(
  base: string,
  form: Record<string, string>,
  opts: { from?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Record<string, string>; retryAfter?: string }> {
  const u = new URL(`${base}/oauth/token`);
  const payload = new URLSearchParams(form).toString();
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        localAddress: opts.from,
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': Buffer.byteLength(payload),
          ...opts.headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: text ? JSON.parse(text) : {},
            retryAfter: res.headers['retry-after'],
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

async function validToken(base = h.url, clientId = TEST_CLIENT_ID, clientSecret = TEST_CLIENT_SECRET): Promise<string> {
  const r = await tokenRequest(base, {
    grant_type: 'client_credentials',
    client_id: clientId,
    client_secret: clientSecret,
  });
  expect(r.status).toBe(200);
  return r.body.access_token!;
}

const api = (token: string, base = h.url) =>
  fetch(`${base}/v1/connectors`, { headers: { authorization: `Bearer ${token}` } });
const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
const hmac = (alg: 'sha256' | 'sha384' | 'sha512', key: string | Buffer, input: string) =>
  createHmac(alg, key).update(input).digest('base64url');

describe('forged bearer tokens', () => {
  it('are all refused with 401, and no key is ever fetched', async () => {
    const good = await validToken();
    const [header, payload, signature] = good.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    // The service's own signing key and its id, as stored: forgeries below that use them fail for another reason.
    const { store, sealer } = h.running.services;
    const active = openKeySet(sealer, (await store.getMeta(SIGNING_KEY_META))!).active;
    const realKey = Buffer.from(active.key, 'base64');
    const key = new Uint8Array(realKey);
    const kid = active.kid;
    const now = Math.floor(Date.now() / 1000);
    const signHs = (
      hdr: Record<string, unknown>,
      body: Record<string, unknown>,
      k: string | Buffer,
      alg: 'sha256' | 'sha384' | 'sha512' = 'sha256',
    ) => {
      const input = `${b64(hdr)}.${b64(body)}`;
      return `${input}.${hmac(alg, k, input)}`;
    };
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const rsaJwk = await exportJWK(rsa.publicKey);
    const ecJwk = await exportJWK(ec.publicKey);
    const rsaPem = rsa.publicKey.export({ type: 'spki', format: 'pem' }) as string;

    const forged: Record<string, string> = {
      'wrong issuer': await new SignJWT({ ...claims, iss: 'https://evil.example' })
        .setProtectedHeader({ alg: 'HS256', kid })
        .sign(key),
      'no issuer': await new SignJWT({ ...claims, iss: undefined }).setProtectedHeader({ alg: 'HS256', kid }).sign(key),
      'wrong audience (array)': await new SignJWT({ ...claims, aud: ['someone-else'] })
        .setProtectedHeader({ alg: 'HS256', kid })
        .sign(key),
      'no audience': await new SignJWT({ ...claims, aud: undefined })
        .setProtectedHeader({ alg: 'HS256', kid })
        .sign(key),
      'no expiry': await new SignJWT({ ...claims, exp: undefined }).setProtectedHeader({ alg: 'HS256', kid }).sign(key),
      'not yet valid': await new SignJWT({ ...claims, nbf: now + 3600 })
        .setProtectedHeader({ alg: 'HS256', kid })
        .sign(key),
      'expired long ago': await new SignJWT({ ...claims, iat: now - 7200, exp: now - 3600 })
        .setProtectedHeader({ alg: 'HS256', kid })
        .sign(key),
      'unknown credential': await new SignJWT({ ...claims, sub: 'cred_does_not_exist' })
        .setProtectedHeader({ alg: 'HS256', kid })
        .sign(key),
      'HS384 with the real key': signHs({ alg: 'HS384', typ: 'JWT', kid }, claims, realKey, 'sha384'),
      'HS512 with the real key': signHs({ alg: 'HS512', typ: 'JWT', kid }, claims, realKey, 'sha512'),
      'crit extension': signHs({ alg: 'HS256', kid, crit: ['exp-ext'], 'exp-ext': true }, claims, realKey),
      'b64 false': signHs({ alg: 'HS256', kid, b64: false, crit: ['b64'] }, claims, realKey),
      'signature stripped': `${header}.${payload}.`,
      'signature only': `..${signature}`,
      'longer lifetime, old signature': `${header}.${b64({ ...claims, exp: now + 10 * 365 * 86400 })}.${signature}`,
      'other subject, old signature': `${header}.${b64({ ...claims, sub: 'cred_admin' })}.${signature}`,
      'header swapped to HS384, old signature': `${b64({ alg: 'HS384', typ: 'JWT' })}.${payload}.${signature}`,
      'RS256 with an embedded jwk': await new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', jwk: rsaJwk })
        .sign(rsa.privateKey),
      'ES256 with an embedded jwk': await new SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256', jwk: ecJwk })
        .sign(ec.privateKey),
      'RS256 with jku': await new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', jku: `${keyServer.url}/jwks.json`, kid: 'k1' })
        .sign(rsa.privateKey),
      'RS256 with x5u': await new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', x5u: `${keyServer.url}/cert.pem` })
        .sign(rsa.privateKey),
      'HS256 keyed with an RSA public key (PEM)': signHs({ alg: 'HS256' }, claims, rsaPem),
      'HS256 keyed with the JWK of a public key': signHs({ alg: 'HS256', jwk: rsaJwk }, claims, JSON.stringify(rsaJwk)),
      'HS256 with an empty key': signHs({ alg: 'HS256' }, claims, ''),
      'HS256 keyed with the audience': signHs({ alg: 'HS256' }, claims, TOKEN_AUDIENCE),
      'HS256 keyed with the issuer': signHs({ alg: 'HS256' }, claims, h.config.publicUrl),
      'HS256 keyed with the client secret': signHs({ alg: 'HS256' }, claims, TEST_CLIENT_SECRET),
      'kid path traversal, empty key': signHs({ alg: 'HS256', kid: '../../../../../../dev/null' }, claims, ''),
      'kid SQL injection': signHs({ alg: 'HS256', kid: "x' UNION SELECT 'key' --" }, claims, 'key'),
      'kid URL': signHs({ alg: 'HS256', kid: `${keyServer.url}/key` }, claims, 'key'),
      'kid command': signHs({ alg: 'HS256', kid: '|cat /etc/passwd' }, claims, ''),
      'real key, kid of a key the service never had': signHs({ alg: 'HS256', kid: 'sNoSuchKey' }, claims, realKey),
      'real key, no kid': signHs({ alg: 'HS256' }, claims, realKey),
      'kid of the real key, another key': signHs({ alg: 'HS256', kid }, claims, 'x'.repeat(32)),
      'JWS JSON serialization': JSON.stringify({ payload, protected: header, signature }),
      'two tokens': `${good},${good}`,
      'huge token': `${header}.${b64({ ...claims, pad: 'x'.repeat(60_000) })}.${signature}`,
    };
    for (const alg of ['none', 'None', 'NONE', 'nOnE']) {
      forged[`alg ${alg}`] = `${b64({ alg, typ: 'JWT' })}.${payload}.`;
      forged[`alg ${alg}, signature kept`] = `${b64({ alg, typ: 'JWT' })}.${payload}.${signature}`;
    }
    await attack(Object.keys(forged).length, async () => {
      for (const [name, token] of Object.entries(forged)) {
        const res = await api(token);
        expect(res.status, name).toBe(name === 'huge token' ? res.status : 401);
        expect(res.status, name).toBeGreaterThanOrEqual(400);
        expect(res.status, name).toBeLessThan(500);
        const proxied = await fetch(`${h.url}/proxy/v2/x`, {
          headers: { authorization: `Bearer ${token}`, connection_name: 'x', identifier: 'y' },
        });
        expect(proxied.status, `${name} on the proxy`).toBeGreaterThanOrEqual(400);
        expect(proxied.status, `${name} on the proxy`).toBeLessThan(500);
      }
      expect(keyServer.requests).toEqual([]);
      expect(keyServer.connections).toBe(0);
      // The real token still works: the refusals were about the forgeries.
      expect((await api(good)).status).toBe(200);
    });
  });

  it('are not taken from the query string or a cookie', async () => {
    await attack(2, async () => {
      const good = await validToken();
      expect((await fetch(`${h.url}/v1/connectors?access_token=${good}`)).status).toBe(401);
      expect((await fetch(`${h.url}/v1/connectors`, { headers: { cookie: `access_token=${good}` } })).status).toBe(401);
    });
  });
});

describe('revocation', () => {
  it('stops a credential in a second instance sharing the store once its revocation cache window has passed', async () => {
    await attack(3, async () => {
      // A second instance on the same data directory: same store, same key file, same public URL (behind one address).
      second = await startServer(
        loadConfig({
          PORT: '0',
          HOST: '127.0.0.1',
          DATA_DIR: h.dataDir,
          PUBLIC_URL: h.config.publicUrl,
          LOG_LEVEL: 'warn',
        }),
      );
      const admin = await validToken();
      const created = await fetch(`${h.url}/v1/api-credentials`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'to revoke' }),
      });
      const cred = (await created.json()) as { id: string; client_id: string; client_secret: string };
      const token = await validToken(h.url, cred.client_id, cred.client_secret);
      // Each instance accepts the other's tokens, and the second has now cached the credential as live.
      expect((await api(token, second.url)).status).toBe(200);
      expect((await api(await validToken(second.url, cred.client_id, cred.client_secret))).status).toBe(200);

      expect(
        (
          await fetch(`${h.url}/v1/api-credentials/${cred.id}`, {
            method: 'DELETE',
            headers: { authorization: `Bearer ${admin}` },
          })
        ).status,
      ).toBe(200);
      expect((await api(token)).status).toBe(401);
      expect(
        (await tokenRequest(second.url, { client_id: cred.client_id, client_secret: cred.client_secret })).status,
      ).toBe(401);

      // Past the second instance's revocation cache window, but well within the token's lifetime (600 s).
      const windowMs = (second.services.tokens as unknown as { revocationCacheMs: number }).revocationCacheMs;
      expect(windowMs).toBeLessThan(h.config.tokenTtlSeconds * 1000);
      const now = Date.now();
      vi.spyOn(Date, 'now').mockReturnValue(now + windowMs + 1);
      const late = await api(token, second.url);
      vi.restoreAllMocks();
      expect(late.status).toBe(401);
      expect(((await late.json()) as { error: { message: string } }).error.message).toMatch(/revoked/);
    });
  });
});

describe('brute force on /oauth/token', () => {
  it('is throttled per client id, whichever addresses the guesses come from', async () => {
    await attack(8, async () => {
      const admin = await validToken();
      const created = await fetch(`${h.url}/v1/api-credentials`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'victim' }),
      });
      const victim = (await created.json()) as { client_id: string; client_secret: string };
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) {
        statuses.push(
          (
            await tokenRequest(
              h.url,
              { client_id: victim.client_id, client_secret: `guess-${i}-xxxxxxxxxxxxxxxx` },
              { from: `127.0.0.${10 + i}` },
            )
          ).status,
        );
      }
      expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
      expect(statuses.at(-1)).toBe(429);
      // While blocked, even the right secret is refused: guessing cannot go on and learn when it hit.
      const right = await tokenRequest(
        h.url,
        { client_id: victim.client_id, client_secret: victim.client_secret },
        { from: '127.0.0.30' },
      );
      expect(right.status).toBe(429);
      expect(Number(right.retryAfter)).toBeGreaterThan(0);
    });
  });

  it('is throttled per address over many client ids, X-Forwarded-For notwithstanding, leaving other addresses alone', async () => {
    await attack(33, async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 32; i++) {
        const r = await tokenRequest(
          h.url,
          { client_id: `spray-${i}`, client_secret: 'spray-secret-xxxxxxxxxxxx' },
          { from: '127.0.0.60', headers: { 'x-forwarded-for': `198.51.100.${i}` } },
        );
        statuses.push(r.status);
      }
      expect(statuses.slice(0, 30).every((s) => s === 401)).toBe(true);
      expect(statuses.at(-1)).toBe(429);
      expect(
        (
          await tokenRequest(
            h.url,
            { client_id: TEST_CLIENT_ID, client_secret: TEST_CLIENT_SECRET },
            { from: '127.0.0.60' },
          )
        ).status,
      ).toBe(429);
      expect(
        (
          await tokenRequest(
            h.url,
            { client_id: TEST_CLIENT_ID, client_secret: TEST_CLIENT_SECRET },
            { from: '127.0.0.61' },
          )
        ).status,
      ).toBe(200);
    });
  });

  it('answers an unknown client and a wrong secret alike, and malformed credentials with a 4xx', async () => {
    await attack(5, async () => {
      const unknown = await tokenRequest(
        h.url,
        { client_id: 'no-such-client', client_secret: 'whatever-xxxxxxxxxxxxxxx' },
        { from: '127.0.0.70' },
      );
      const wrong = await tokenRequest(
        h.url,
        { client_id: TEST_CLIENT_ID, client_secret: 'whatever-xxxxxxxxxxxxxxx' },
        { from: '127.0.0.71' },
      );
      expect([unknown.status, unknown.body]).toEqual([wrong.status, wrong.body]);
      for (const basic of [
        Buffer.from('%E0:%zz').toString('base64'),
        Buffer.from('client:%').toString('base64'),
        '!!!',
        Buffer.from(':secret-only').toString('base64'),
      ]) {
        const r = await tokenRequest(
          h.url,
          { grant_type: 'client_credentials' },
          { from: '127.0.0.72', headers: { authorization: `Basic ${basic}` } },
        );
        expect(r.status, basic).toBeGreaterThanOrEqual(400);
        expect(r.status, basic).toBeLessThan(500);
      }
    });
  });
});

describe('the secret check', () => {
  it('compares fixed-length digests with timingSafeEqual, also for unknown clients', async () => {
    // Timing cannot be asserted in a test, so this checks the mechanism that makes it constant: every attempt,
    // whatever the secret's length and whether the client exists, ends in one timingSafeEqual of two SHA-256 digests.
    await attack(4, async () => {
      const calls: Array<[number, number]> = [];
      const original = crypto.timingSafeEqual;
      crypto.timingSafeEqual = (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
        calls.push([a.byteLength, b.byteLength]);
        return original(a, b);
      };
      syncBuiltinESMExports();
      try {
        for (const [id, secret] of [
          [TEST_CLIENT_ID, 'x'],
          [TEST_CLIENT_ID, 'y'.repeat(4000)],
          ['client-that-does-not-exist', 'z'],
          [TEST_CLIENT_ID, TEST_CLIENT_SECRET],
        ] as const) {
          const before = calls.length;
          await tokenRequest(h.url, { client_id: id, client_secret: secret }, { from: '127.0.0.80' });
          expect(calls.slice(before), `${id} / ${secret.length} characters`).toEqual([[32, 32]]);
        }
      } finally {
        crypto.timingSafeEqual = original;
        syncBuiltinESMExports();
      }
      const stored = (await h.running.services.store.getApiCredentialByClientId(TEST_CLIENT_ID))!;
      expect(stored.secretHash).toBe(createHash('sha256').update(TEST_CLIENT_SECRET).digest('hex'));
    });
  });
});
