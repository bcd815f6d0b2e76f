/** The authorization-code exchange against the fake OAuth server, with and without PKCE. */
import { randomBytes } from 'node:crypto';
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeOAuthServer } from '../fakes/oauth-server.ts';
import { exchangeCode } from '../../runtime/oauth/tokens.ts';
import { oauthFetch, type OAuthEndpoints } from '../../runtime/oauth/endpoints.ts';
import { hostAndPort } from '../../runtime/upstream/address-guard.ts';

const REDIRECT = 'http://127.0.0.1:9/callback';
let server: FakeOAuthServer;
let plain: FakeOAuthServer;

function endpoints(s: FakeOAuthServer, pkce: boolean): OAuthEndpoints {
  return {
    as: { issuer: s.url, authorization_endpoint: s.authorizeUrl, token_endpoint: s.tokenUrl },
    client: { client_id: 'c1' },
    clientAuth: oauth.ClientSecretPost('s1'),
    insecure: true,
    scopes: ['a', 'b'],
    scopeSeparator: ' ',
    pkce,
    authorizeParams: {},
    tokenResponseFields: {},
    fetch: oauthFetch([hostAndPort(new URL(s.url))]),
  };
}

async function codeFrom(s: FakeOAuthServer, challenge?: string): Promise<string> {
  const u = new URL(s.authorizeUrl);
  u.search = new URLSearchParams({
    client_id: 'c1',
    response_type: 'code',
    redirect_uri: REDIRECT,
    scope: 'a b',
    state: 'st',
    ...(challenge ? { code_challenge: challenge, code_challenge_method: 'S256' } : {}),
  }).toString();
  const res = await fetch(u, { redirect: 'manual' });
  const back = new URL(res.headers.get('location')!);
  expect(back.searchParams.get('error')).toBeNull();
  return back.searchParams.get('code')!;
}

beforeAll(async () => {
  server = await new FakeOAuthServer().start();
  plain = await new FakeOAuthServer({ requirePkce: false }).start();
  for (const s of [server, plain]) s.addClient({ client_id: 'c1', client_secret: 's1', auth: 'client_secret_post' });
});
afterAll(async () => {
  await server?.close();
  await plain?.close();
});

describe('exchangeCode', () => {
  it('exchanges a code with the PKCE verifier', async () => {
    const verifier = oauth.generateRandomCodeVerifier();
    const code = await codeFrom(server, await oauth.calculatePKCECodeChallenge(verifier));
    const tokens = await exchangeCode(endpoints(server, true), new URLSearchParams({ code }), REDIRECT, verifier);
    expect(server.validate(tokens.access_token)).toMatchObject({ clientId: 'c1', scope: 'a b' });
    expect(tokens.refresh_token).toMatch(/^rt_/);
    expect(server.tokenRequests.at(-1)).toMatchObject({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_secret: 's1',
      redirect_uri: REDIRECT,
    });
  });

  it('exchanges a code without PKCE, sending no verifier', async () => {
    const code = await codeFrom(plain);
    const tokens = await exchangeCode(endpoints(plain, false), new URLSearchParams({ code }), REDIRECT, undefined);
    expect(plain.validate(tokens.access_token)).toBeDefined();
    expect(plain.tokenRequests.at(-1)!.code_verifier).toBeUndefined();
  });

  it('reports a refused code as invalid_grant', async () => {
    await expect(
      exchangeCode(
        endpoints(plain, false),
        new URLSearchParams({ code: `code_${randomBytes(8).toString('hex')}` }),
        REDIRECT,
        undefined,
      ),
    ).rejects.toMatchObject({ kind: 'invalid_grant' });
  });
});
