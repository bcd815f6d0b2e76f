/**
 * A connection whose users choose between several auth kinds (issue 38): call intelligence with OAuth or an access
 * key, against the fake Gong and the fake authorization server. The hosted connect page offers the choice (plain
 * HTTP here, as a browser without script would post it); each path connects an account that records its kind, and
 * a tool call and a proxy call then send that kind's credential. The upsert says or infers the kind; bad
 * `auth_kinds` and bad kinds are refused naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeGong } from '../fakes/gong.ts';
import { oauthConnection, serviceToken, startHarness, type Harness } from '../helpers/harness.ts';
import { requestsDuring } from '../helpers/tools.ts';

const KEY = 'QWERTY1234567890';
const SECRET = 'gong-secret-choice-1a2b3c';
const basicHeader = `Basic ${Buffer.from(`${KEY}:${SECRET}`).toString('base64')}`;

let h: Harness;
let gong: FakeGong;
let token: string;

beforeAll(async () => {
  gong = await new FakeGong({ accessKey: KEY, accessKeySecret: SECRET }).start();
  h = await startHarness({
    env: { ALLOWED_REDIRECT_ORIGINS: 'https://app.example.com' },
    oauth: { requirePkce: false, extraTokenFields: { api_base_url_for_customer: gong.url } },
  });
  gong.bearerScopes = (t) => h.oauth.validate(t)?.scope.split(' ');
  await oauthConnection(h, 'gong', 'callintel', gong.url, {
    authMethod: 'client_secret_basic',
    extra: { auth_kinds: ['oauth2', 'api_key'] },
  });
  token = await serviceToken(h.url);
});
afterAll(async () => {
  await gong?.close();
  await h?.close();
});

const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${h.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as any };
};

/** Opens a link as a browser would: the page's HTML and its CSRF cookie and token. */
async function open(link: string) {
  const res = await fetch(link, { redirect: 'manual' });
  const html = await res.text();
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!;
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
  const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1] ?? '';
  return { status: res.status, html, cookie, csrf, csp: res.headers.get('content-security-policy') ?? '', action };
}

/** Posts the page's form (urlencoded, as a browser without script does). */
function post(page: { cookie: string; action: string }, form: Record<string, string>, cookie = page.cookie) {
  return fetch(page.action.replace(/&amp;/g, '&'), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(form).toString(),
  });
}

const toolCall = (identifier: string) =>
  h.client.executeTool({
    toolName: 'callintel_engage_workspaces_list',
    toolInput: {},
    connectionName: 'gong',
    identifier,
  } as never);

describe('a connection with several auth kinds', () => {
  it('shows its kinds, and refuses kinds the connector lacks, repeated ones, and OAuth anywhere but first', async () => {
    const got = await api('GET', '/v1/connections/gong');
    expect(got.status).toBe(200);
    expect(got.body.auth_kind).toBe('oauth2');
    expect(got.body.auth_kinds).toEqual(['oauth2', 'api_key']);
    for (const [auth_kinds, field, words] of [
      [['oauth2', 'bearer'], 'auth_kinds[1]', 'must be one of: oauth2, api_key'],
      [['api_key', 'api_key'], 'auth_kinds[1]', 'repeats api_key'],
      [['api_key', 'oauth2'], 'auth_kinds[1]', 'must come first'],
    ] as const) {
      const r = await api('POST', '/v1/connections', {
        connection_name: `bad-${field.length}-${auth_kinds.join('-')}`,
        connector: 'callintel',
        auth_kinds,
      });
      expect(r.status, JSON.stringify(auth_kinds)).toBe(400);
      expect(r.body.error.code).toBe('invalid_input');
      const detail = r.body.error.details.find((d: { field: string }) => d.field === field);
      expect(detail?.message).toContain(words);
    }
    const mixed = await api('POST', '/v1/connections', {
      connection_name: 'bad-mixed',
      connector: 'callintel',
      auth_kind: 'api_key',
      auth_kinds: ['oauth2', 'api_key'],
    });
    expect(mixed.status).toBe(400);
    expect(mixed.body.error.details[0].field).toBe('auth_kind');
    expect((await api('GET', '/v1/connections/bad-mixed')).status).toBe(404);
    // Fixed once created, like auth_kind; the same list again is accepted.
    const changed = await api('PATCH', '/v1/connections/gong', { auth_kinds: ['oauth2'] });
    expect(changed.status).toBe(400);
    expect(changed.body.error.details).toEqual([
      { field: 'auth_kinds', message: 'cannot change; create a new connection' },
    ]);
    expect((await api('PATCH', '/v1/connections/gong', { auth_kinds: ['oauth2', 'api_key'] })).status).toBe(200);
  });

  it('the link offers the choice; OAuth goes on to the provider, and the account calls with its bearer token', async () => {
    const { link, connected_account_id: id } = await h.client.getAuthorizationLink({
      connectionName: 'gong',
      identifier: 'rep-1',
    });
    const page = await open(link);
    expect(page.status).toBe(200);
    expect(page.html).toContain('<legend>How do you want to connect?</legend>');
    expect(page.html).toContain('name="choose" value="oauth2"');
    expect(page.html).toContain('name="choose" value="api_key"');
    // The choice posts here and is redirected to the provider: its origin is a form-action of the page.
    expect(page.csp).toContain(`form-action ${new URL(h.url).origin} ${new URL(h.oauth.authorizeUrl).origin}`);

    // Without the page's cookie: refused, nothing started.
    expect(
      (await post(page, { link: new URL(link).searchParams.get('link')!, csrf: page.csrf, choose: 'oauth2' }, ''))
        .status,
    ).toBe(403);
    // A kind the connection does not offer: the choice again, with an alert.
    const wrong = await post(page, {
      link: new URL(link).searchParams.get('link')!,
      csrf: page.csrf,
      choose: 'bearer',
    });
    expect(wrong.status).toBe(400);
    expect(await wrong.text()).toContain('Choose one of the ways to connect below.');

    const chose = await post(page, {
      link: new URL(link).searchParams.get('link')!,
      csrf: page.csrf,
      choose: 'oauth2',
    });
    expect(chose.status).toBe(303);
    const authorize = new URL(chose.headers.get('location')!);
    expect(authorize.origin + authorize.pathname).toBe(h.oauth.authorizeUrl);
    authorize.searchParams.set('fake_user', 'rep-1');
    const consent = await fetch(authorize, { redirect: 'manual' });
    expect(consent.status).toBe(302);
    const callback = await fetch(consent.headers.get('location')!, { redirect: 'manual' });
    expect(callback.status).toBe(200);

    const account = await h.client.getConnectedAccount(id);
    expect(account.status).toBe('ACTIVE');
    expect((account as unknown as { auth_kind: string }).auth_kind).toBe('oauth2');
    const seen = await requestsDuring(
      () => gong.requests,
      async () => {
        expect(((await toolCall('rep-1')).data as { workspaces: unknown[] }).workspaces).toHaveLength(2);
        const proxied = await h.client.request({ connectionName: 'gong', identifier: 'rep-1', path: '/v2/workspaces' });
        expect(proxied.status).toBe(200);
      },
    );
    expect(seen).toHaveLength(2);
    for (const r of seen) expect(r.authorization).toMatch(/^Bearer /);
    // The link is spent: opening it again says so.
    expect((await fetch(link, { redirect: 'manual' })).status).toBe(410);
  });

  it('the access-key path: its fields, a refusal by Gong next to the secret, then the key connects and is used', async () => {
    const { link, connected_account_id: id } = await h.client.getAuthorizationLink({
      connectionName: 'gong',
      identifier: 'acme',
    });
    const linkToken = new URL(link).searchParams.get('link')!;
    const page = await open(link);
    const form = await post(page, { link: linkToken, csrf: page.csrf, choose: 'api_key' });
    expect(form.status).toBe(200);
    const html = await form.text();
    expect(html).toContain('name="auth_kind" value="api_key"');
    expect(html).toMatch(/id="f-access_key_secret" name="c_access_key_secret" type="password"/);
    expect(html).toContain('Choose another way to connect');

    const fields = { link: linkToken, csrf: page.csrf, auth_kind: 'api_key', c_access_key: KEY };
    const refused = await post(page, { ...fields, c_access_key_secret: 'not-the-secret' });
    expect(refused.status).toBe(400);
    const refusal = await refused.text();
    expect(refusal).toMatch(/<p class="error" id="f-access_key_secret-error">[^<]*refused these credentials/);
    expect((await h.client.getConnectedAccount(id)).status).toBe('PENDING_AUTH');

    const saved = await post(page, { ...fields, c_access_key_secret: SECRET });
    expect(saved.status).toBe(200);
    expect(await saved.text()).toContain('Account connected');
    const account = await h.client.getConnectedAccount(id);
    expect(account.status).toBe('ACTIVE');
    expect((account as unknown as { auth_kind: string }).auth_kind).toBe('api_key');
    expect(account.fields).toEqual({ access_key: KEY, api_base_url: 'https://api.gong.io' });

    const seen = await requestsDuring(
      () => gong.requests,
      async () => {
        expect(((await toolCall('acme')).data as { workspaces: unknown[] }).workspaces).toHaveLength(2);
        expect(
          (await h.client.request({ connectionName: 'gong', identifier: 'acme', path: '/v2/workspaces' })).status,
        ).toBe(200);
      },
    );
    expect(seen).toHaveLength(2);
    for (const r of seen) expect(r.authorization).toBe(basicHeader);
    // Single use: the same form again saves nothing.
    expect((await post(page, { ...fields, c_access_key_secret: SECRET })).status).toBe(410);
  });

  it('reconnecting a key account with OAuth switches its kind, on the same account', async () => {
    const before = await h.client.getOrCreateConnectedAccount({ connectionName: 'gong', identifier: 'acme' });
    const { link } = await h.client.getAuthorizationLink({ connectionName: 'gong', identifier: 'acme' });
    const page = await open(link);
    const chose = await post(page, {
      link: new URL(link).searchParams.get('link')!,
      csrf: page.csrf,
      choose: 'oauth2',
    });
    const authorize = new URL(chose.headers.get('location')!);
    authorize.searchParams.set('fake_user', 'acme');
    const consent = await fetch(authorize, { redirect: 'manual' });
    expect((await fetch(consent.headers.get('location')!, { redirect: 'manual' })).status).toBe(200);
    const after = await h.client.getConnectedAccount(before.id);
    expect((after as unknown as { auth_kind: string }).auth_kind).toBe('oauth2');
    const seen = await requestsDuring(
      () => gong.requests,
      () => toolCall('acme'),
    );
    expect(seen[0]!.authorization).toMatch(/^Bearer /);
  });

  it('with user_verify_url, the access key waits for the application, then the verified account uses it', async () => {
    const { link, connected_account_id: id } = await h.client.getAuthorizationLink({
      connectionName: 'gong',
      identifier: 'verified',
      userVerifyUrl: 'https://app.example.com/verify',
    });
    const linkToken = new URL(link).searchParams.get('link')!;
    const page = await open(link);
    await post(page, { link: linkToken, csrf: page.csrf, choose: 'api_key' });
    const saved = await post(page, {
      link: linkToken,
      csrf: page.csrf,
      auth_kind: 'api_key',
      c_access_key: KEY,
      c_access_key_secret: SECRET,
    });
    expect(saved.status).toBe(303);
    const to = new URL(saved.headers.get('location')!);
    expect(to.origin + to.pathname).toBe('https://app.example.com/verify');
    expect((await h.client.getConnectedAccount(id)).status).toBe('PENDING_VERIFICATION');
    const verified = await api('POST', '/v1/connected-accounts/verify', {
      auth_request_id: to.searchParams.get('auth_request_id'),
      identifier: 'verified',
    });
    expect(verified.status).toBe(200);
    const account = await h.client.getConnectedAccount(id);
    expect(account.status).toBe('ACTIVE');
    expect((account as unknown as { auth_kind: string }).auth_kind).toBe('api_key');
    expect(JSON.stringify(account)).not.toContain('$auth_kind');
    const seen = await requestsDuring(
      () => gong.requests,
      () => toolCall('verified'),
    );
    expect(seen[0]!.authorization).toBe(basicHeader);
  });

  it('the upsert says the kind or it is inferred from the credentials; a wrong or unclear kind is refused', async () => {
    const put = (body: Record<string, unknown>) =>
      api('PUT', '/v1/connected-accounts', { connection_name: 'gong', ...body });
    const inferred = await put({
      identifier: 'import-key',
      credentials: { access_key: KEY, access_key_secret: SECRET, api_base_url: 'https://us-1.api.gong.io' },
    });
    expect(inferred.status).toBe(200);
    expect(inferred.body.connected_account.auth_kind).toBe('api_key');
    const tokens = await put({
      identifier: 'import-oauth',
      credentials: { access_token: 'imported-token', api_base_url: 'https://us-7.api.gong.io' },
    });
    expect(tokens.status).toBe(200);
    expect(tokens.body.connected_account.auth_kind).toBe('oauth2');

    const unclear = await put({ identifier: 'import-none', credentials: { something: 'x' } });
    expect(unclear.status).toBe(400);
    expect(unclear.body.error.details[0]).toEqual({
      field: 'auth_kind',
      message: 'is required: this connection takes oauth2 or api_key credentials and these fit none of them',
    });
    const wrongKind = await put({ identifier: 'import-none', auth_kind: 'bearer', credentials: { token: 'x' } });
    expect(wrongKind.status).toBe(400);
    expect(wrongKind.body.error.details[0].message).toBe("must be one of this connection's: oauth2, api_key");
    // Said explicitly, the kind's own validation applies.
    const named = await put({ identifier: 'import-none', auth_kind: 'api_key', credentials: { access_key: KEY } });
    expect(named.status).toBe(400);
    expect(named.body.error.details[0].field).toBe('credentials.access_key_secret');
    // Nothing was stored for the refused upserts.
    const list = await api('GET', '/v1/connected-accounts?connection_name=gong&identifier=import-none');
    expect(list.body.connected_accounts).toEqual([]);
  });
});
