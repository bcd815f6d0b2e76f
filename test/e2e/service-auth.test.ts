/** The service's own authentication: client credentials → short-lived signed token, and what it refuses. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignJWT, UnsecuredJWT } from 'jose';
import { startHarness, TEST_CLIENT_ID, TEST_CLIENT_SECRET, type Harness } from '../helpers/harness.ts';
import { openKeySet, SIGNING_KEY_META } from '../../runtime/auth/signing-keys.ts';
import { ServiceTokens } from '../../runtime/auth/service-auth.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { TOKEN_TTL_SECONDS: '600' } });
});
afterAll(async () => h?.close());

const tokenRequest = (init: RequestInit) => fetch(`${h.url}/oauth/token`, { method: 'POST', ...init });
const api = (token: string) => fetch(`${h.url}/v1/connectors`, { headers: { authorization: `Bearer ${token}` } });

async function validToken(): Promise<string> {
  const res = await tokenRequest({
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: TEST_CLIENT_ID,
      client_secret: TEST_CLIENT_SECRET,
    }),
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

describe('POST /oauth/token', () => {
  it('accepts form fields, JSON and HTTP Basic', async () => {
    const form = await tokenRequest({
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: TEST_CLIENT_ID,
        client_secret: TEST_CLIENT_SECRET,
      }),
    });
    const json = await tokenRequest({
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        grant_type: 'client_credentials',
        client_id: TEST_CLIENT_ID,
        client_secret: TEST_CLIENT_SECRET,
      }),
    });
    const basic = await tokenRequest({
      headers: {
        authorization: `Basic ${Buffer.from(`${TEST_CLIENT_ID}:${TEST_CLIENT_SECRET}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    for (const res of [form, json, basic]) {
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      const body = (await res.json()) as { access_token: string; token_type: string; expires_in: number };
      expect(body.token_type).toBe('Bearer');
      expect(body.expires_in).toBe(600);
      expect((await api(body.access_token)).status).toBe(200);
    }
  });

  it('refuses a wrong secret, an unknown client and another grant type', async () => {
    expect(
      (
        await tokenRequest({
          body: new URLSearchParams({ client_id: TEST_CLIENT_ID, client_secret: 'wrong-wrong-wrong-wrong' }),
        })
      ).status,
    ).toBe(401);
    expect(
      (
        await tokenRequest({
          body: new URLSearchParams({
            grant_type: 'password',
            client_id: TEST_CLIENT_ID,
            client_secret: TEST_CLIENT_SECRET,
          }),
        })
      ).status,
    ).toBe(400);
    expect((await tokenRequest({ body: new URLSearchParams({}) })).status).toBe(400);
  });

  it('throttles brute force with 429 and Retry-After', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await tokenRequest({
        body: new URLSearchParams({ client_id: 'victim', client_secret: `guess-${i}-xxxxxxxxxxxxxxxx` }),
      });
      statuses.push(res.status);
      if (res.status === 429) expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    expect(statuses.slice(0, 5).every((s) => s === 401)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
  });
});

describe('bearer tokens', () => {
  it('are required on every API route and on the proxy', async () => {
    for (const path of ['/v1/connectors', '/v1/tools', '/v1/connections', '/proxy/v2/tickets']) {
      const res = await fetch(`${h.url}${path}`);
      expect(res.status, path).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
    }
    expect((await fetch(`${h.url}/health`)).status).toBe(200);
  });

  it('refuses tampered, wrong-audience, wrong-algorithm, unsigned and expired tokens', async () => {
    const good = await validToken();
    const [header, payload, sig] = good.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const tampered = `${header}.${Buffer.from(JSON.stringify({ ...claims, sub: 'cred_other' })).toString('base64url')}.${sig}`;
    const none = new UnsecuredJWT(claims).encode();
    const otherKey = new TextEncoder().encode('x'.repeat(32));
    const foreign = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(otherKey);
    const hs512 = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS512' })
      .sign(new TextEncoder().encode('x'.repeat(64)));
    // Signed with the real key but for another audience, and expired: built with the service's own key and its id.
    const { store, sealer } = h.running.services;
    const active = openKeySet(sealer, (await store.getMeta(SIGNING_KEY_META))!).active;
    const key = new Uint8Array(Buffer.from(active.key, 'base64'));
    const wrongAud = await new SignJWT({ ...claims, aud: 'someone-else' })
      .setProtectedHeader({ alg: 'HS256', kid: active.kid })
      .sign(key);
    const expired = await new SignJWT({ ...claims, exp: Math.floor(Date.now() / 1000) - 10 })
      .setProtectedHeader({ alg: 'HS256', kid: active.kid })
      .sign(key);
    for (const [name, t] of Object.entries({ tampered, none, foreign, hs512, wrongAud, expired, garbage: 'abc' })) {
      const res = await api(t);
      expect(res.status, name).toBe(401);
    }
    const res = await api(expired);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/expired/);
  });

  it('refuses a token that shares a known token’s signature, and reads the header as before', async () => {
    const good = await validToken();
    const { tokens } = h.running.services;
    expect((await api(good)).status).toBe(200);
    expect(tokens.knownClaims(good)).toBeDefined();
    // The verified tokens are found by their signature part: another payload under the same signature is not the
    // known token, and the full check refuses it.
    const [header, payload, sig] = good.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>;
    const forged = `${header}.${Buffer.from(JSON.stringify({ ...claims, sub: 'cred_other' })).toString('base64url')}.${sig}`;
    expect(tokens.knownClaims(forged)).toBeUndefined();
    expect((await api(forged)).status).toBe(401);
    expect(tokens.knownClaims(`${header}.${payload}x.${sig}`)).toBeUndefined();
    // The known token still answers from memory.
    expect(tokens.knownClaims(good)).toBeDefined();
    // The scheme in any case and more than one space, as the header's grammar allows; anything after the token is
    // refused.
    const withHeader = (authorization: string) => fetch(`${h.url}/v1/connectors`, { headers: { authorization } });
    expect((await withHeader(`bearer ${good}`)).status).toBe(200);
    expect((await withHeader(`Bearer    ${good}`)).status).toBe(200);
    expect((await withHeader(`Bearer ${good} extra`)).status).toBe(401);
    expect((await withHeader(`Bearer ${good}.`)).status).toBe(401);
    expect((await withHeader(`Basic ${good}`)).status).toBe(401);
    expect((await withHeader('Bearer ')).status).toBe(401);
  });

  it("stops a revoked credential's tokens at once", async () => {
    const res = await fetch(`${h.url}/v1/api-credentials`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await validToken()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'temp' }),
    });
    const cred = (await res.json()) as { id: string; client_id: string; client_secret: string };
    const t = (
      (await (
        await tokenRequest({
          body: new URLSearchParams({ client_id: cred.client_id, client_secret: cred.client_secret }),
        })
      ).json()) as { access_token: string }
    ).access_token;
    // Not verified yet: nothing known, so the route awaits a full check.
    const { tokens } = h.running.services;
    expect(tokens.knownClaims(t)).toBeUndefined();
    expect((await api(t)).status).toBe(200);
    // Verified: the next request's check is answered from memory...
    expect(tokens.knownClaims(t)?.credentialId).toBe(cred.id);
    const revoke = await fetch(`${h.url}/v1/api-credentials/${cred.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${await validToken()}` },
    });
    expect(revoke.status).toBe(200);
    // ...until the credential changes: then never, and the full check refuses it.
    expect(tokens.knownClaims(t)).toBeUndefined();
    expect((await api(t)).status).toBe(401);
    expect(tokens.knownClaims(t)).toBeUndefined();
    expect(
      (
        await tokenRequest({
          body: new URLSearchParams({ client_id: cred.client_id, client_secret: cred.client_secret }),
        })
      ).status,
    ).toBe(401);
  });
});

describe('bearer tokens while the change feed is not live', () => {
  it('are answered from memory only while the signing keys were read within the revocation window', async () => {
    const { store, sealer, config } = h.running.services;
    // A second token checker on the same store, with a one-second window: its keys are read at init.
    const tokens = new ServiceTokens(store, sealer, config.publicUrl, config.tokenTtlSeconds, 1_000);
    await tokens.init();
    const token = await validToken();
    await new Promise((r) => setTimeout(r, 1_100));
    // Verified now (the credential's state read now); with a live feed the keys are not read again, so they date
    // from init, more than the window ago.
    expect(store.changes.live).toBe(true);
    expect((await tokens.verify(token)).clientId).toBe(TEST_CLIENT_ID);
    expect(tokens.knownClaims(token)?.clientId).toBe(TEST_CLIENT_ID);
    store.changes.live = false;
    try {
      // Without the feed, a change to the keys might not have reached this process: the token is not answered
      // from memory, though the credential's state is fresh...
      expect(tokens.knownClaims(token)).toBeUndefined();
      // ...and a full check reads the keys again, after which it is.
      expect((await tokens.verify(token)).clientId).toBe(TEST_CLIENT_ID);
      expect(tokens.knownClaims(token)?.clientId).toBe(TEST_CLIENT_ID);
    } finally {
      store.changes.live = true;
    }
  });
});

describe('request bodies', () => {
  it('answers malformed JSON with 400 and oversized bodies with 413', async () => {
    const t = await validToken();
    const bad = await fetch(`${h.url}/v1/tools/execute`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
      body: '{"tool_name": ',
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
    const big = await fetch(`${h.url}/v1/tools/execute`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
      body: JSON.stringify({ x: 'a'.repeat(2 * 1024 * 1024) }),
    });
    expect(big.status).toBe(413);
  });
});
