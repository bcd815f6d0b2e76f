/**
 * The route table (runtime/api/router.ts) on a running service: one matching rule for every route (case,
 * trailing slash, percent-encoding, HEAD, absolute-form targets), the hot routes served by the same steps as the
 * rest (an error looks the same on either), and request bodies checked by the endpoint schemas — unknown fields
 * refused, JavaScript built-in names included, nested ones too, with nothing stored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, TEST_CLIENT_ID, TEST_CLIENT_SECRET, type Harness } from '../helpers/harness.ts';
import { Sentinel } from '../reliability/sentinel.ts';
import { rawExchange, rawHttp } from '../reliability/raw-socket.ts';
import { Router } from '../../runtime/api/router.ts';
import { routeTable } from '../../runtime/api/routes.ts';

let h: Harness;
let sentinel: Sentinel;
let token: string;

beforeAll(async () => {
  h = await startHarness({ env: { LOG_LEVEL: 'warn', BODY_LIMIT_BYTES: '4096' } });
  sentinel = await new Sentinel().start();
  const res = await fetch(`${h.url}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({ client_id: TEST_CLIENT_ID, client_secret: TEST_CLIENT_SECRET }),
  });
  token = ((await res.json()) as { access_token: string }).access_token;
  await h.client.createConnection({ connection_name: 'data', connector: 'prodata', api_base_url: sentinel.url });
  await h.client.upsertConnectedAccount({ connectionName: 'data', identifier: 'u1', credentials: { api_key: 'k-1' } });
});
afterAll(async () => {
  await sentinel?.close();
  await h?.close();
});

async function send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${h.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: Record<string, any> | undefined;
  try {
    json = JSON.parse(text) as Record<string, any>;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

const dryRun = {
  tool_name: 'prodata_scrape_profile',
  tool_input: { profile_url: 'https://www.linkedin.com/in/x' },
  connection_name: 'data',
  identifier: 'u1',
  dry_run: true,
};

/** An error answer without what differs between any two requests (its id). */
const shape = (r: Awaited<ReturnType<typeof send>>) => ({
  status: r.status,
  source: r.headers.get('x-error-source'),
  type: r.headers.get('content-type'),
  error: r.json?.error,
  hasRequestId: typeof r.json?.request_id === 'string',
});

describe('one matching rule for every route', () => {
  it('serves POST /V1/tools/execute/ as POST /v1/tools/execute, as GET /V1/TOOLS/ is GET /v1/tools', async () => {
    const plain = await send('POST', '/v1/tools/execute', dryRun);
    expect(plain.status).toBe(200);
    for (const path of ['/V1/tools/execute', '/v1/tools/execute/', '/V1/Tools/Execute/']) {
      const other = await send('POST', path, dryRun);
      expect(other.status, path).toBe(200);
      expect(other.json!.data, path).toEqual(plain.json!.data);
    }
    const tools = await send('GET', '/v1/tools');
    for (const path of ['/V1/TOOLS/', '/v1/tools/', '/V1/Tools']) {
      expect((await send('GET', path)).json, path).toEqual(tools.json);
    }
  });

  it('decodes a path parameter once and compares fixed parts as sent', async () => {
    await h.client.createConnection({ connection_name: 'a-b.c', connector: 'helpdesk' });
    expect((await send('GET', '/v1/connections/a%2Db.c')).json!.connection_name).toBe('a-b.c');
    expect((await send('GET', '/V1/Connections/a-b.c/')).json!.connection_name).toBe('a-b.c');
    // A name is data, not part of the route: its case is the connection's.
    expect((await send('GET', '/v1/connections/A-B.C')).status).toBe(404);
    expect((await send('GET', '/v1/%74ools')).status).toBe(404);
    const bad = await send('GET', '/v1/connections/%ZZ');
    expect(bad.status).toBe(400);
    expect(bad.json!.error.details).toEqual([
      { field: 'connection_name', message: 'is not valid percent-encoded UTF-8' },
    ]);
  });

  it('answers HEAD with the GET route, and a method the path does not have with a 404', async () => {
    const head = await fetch(`${h.url}/v1/tools/helpdesk_ticket_get`, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    const wrong = await send('PUT', '/v1/tools');
    expect(wrong.status).toBe(404);
    expect(wrong.json!.error).toEqual({ code: 'not_found', message: 'No route PUT /v1/tools' });
  });

  it('passes the rest of a proxied path as sent: case, trailing slash, encoding and query', async () => {
    const headers = { connection_name: 'data', identifier: 'u1' };
    for (const [path, upstream] of [
      ['/PROXY/Echo/', '/Echo/'],
      ['/proxy/a%20b/c?q=A%2Fb&q=2', '/a%20b/c?q=A%2Fb&q=2'],
    ]) {
      const res = await send('GET', path!, undefined, headers);
      expect(res.status, path).toBe(200);
      expect(sentinel.requests.at(-1)!.url).toBe(upstream);
    }
  });

  it('routes an absolute-form target by its path, except the proxy, which takes a path only', async () => {
    const host = new URL(h.url).host;
    const auth = [`Host: ${host}`, `Authorization: Bearer ${token}`];
    const tools = await rawExchange(h.url, rawHttp(`GET http://${host}/v1/tools/helpdesk_ticket_get HTTP/1.1`, auth));
    expect(tools.status).toBe(200);
    const before = sentinel.requests.length;
    const proxied = await rawExchange(
      h.url,
      rawHttp(`GET http://${host}/proxy/echo HTTP/1.1`, [...auth, 'connection_name: data', 'identifier: u1']),
    );
    expect(proxied.status).toBe(400);
    expect(proxied.raw).toMatch(/invalid_proxy_path/);
    expect(sentinel.requests.length).toBe(before);
  });

  it('matches in process as over HTTP: the same table, the same rule', () => {
    const router = new Router(h.running.services, routeTable(h.running.services));
    const op = (method: string, url: string) => router.match(method, url)?.route.operation;
    expect(op('POST', '/V1/TOOLS/EXECUTE/')).toBe('executeTool');
    expect(op('GET', '/v1/tools/execute')).toBe('getTool');
    expect(op('POST', '/v1/connected-accounts/authorization-link/')).toBe('createAuthorizationLink');
    expect(op('GET', '/v1/connected-accounts/authorization-link')).toBe('getConnectedAccount');
    expect(op('POST', '/V1/connected-accounts/ca_1/DISCONNECT')).toBe('disconnectConnectedAccount');
    expect(op('PATCH', '/Proxy/x')).toBe('proxy');
    expect(router.match('GET', '/proxy/A/b/?x=1')!.rest).toBe('/A/b/?x=1');
    expect(op('GET', '/v1//tools')).toBeUndefined();
    expect(op('GET', '/dashboard')).toBeUndefined();
    expect(op('DELETE', '/v1/tools')).toBeUndefined();
  });
});

describe('one error renderer, on the hot routes as on the others', () => {
  it('renders a missing token, a bad token and invalid JSON alike on every route', async () => {
    const routes: Array<[string, string]> = [
      ['POST', '/v1/tools/execute'],
      ['GET', '/proxy/echo'],
      ['POST', '/v1/connections'],
      ['GET', '/v1/connectors'],
    ];
    const noToken = await Promise.all(routes.map(([m, p]) => send(m, p, undefined, { authorization: '' })));
    const badToken = await Promise.all(routes.map(([m, p]) => send(m, p, undefined, { authorization: 'Bearer x' })));
    for (const answers of [noToken, badToken]) {
      for (const a of answers) {
        expect(shape(a)).toEqual(shape(answers[0]!));
        expect(a.headers.get('www-authenticate')).toBe('Bearer');
      }
      expect(answers[0]!.status).toBe(401);
    }
    const invalid = await Promise.all(
      [['/v1/tools/execute'], ['/v1/connections'], ['/v1/api-credentials']].map(([p]) => send('POST', p!, '{"a":')),
    );
    for (const a of invalid) expect(shape(a)).toEqual(shape(invalid[0]!));
    expect(invalid[0]!.json!.error.code).toBe('invalid_json');
    const big = JSON.stringify({ name: 'x'.repeat(5000) });
    const tooLarge = await Promise.all(['/v1/tools/execute', '/v1/api-credentials'].map((p) => send('POST', p, big)));
    expect(shape(tooLarge[0]!)).toEqual(shape(tooLarge[1]!));
    expect(tooLarge[0]!.status).toBe(413);
  });

  it('refuses a body that is not an object in the same words on every JSON route', async () => {
    const a = await send('POST', '/v1/tools/execute', '[1]');
    const b = await send('POST', '/v1/connected-accounts', '[]');
    expect(a.json!.error.details).toEqual([{ field: '(body)', message: 'must be a JSON object' }]);
    expect(b.json!.error.details).toEqual(a.json!.error.details);
    expect(a.json!.error.message).toBe('The request body must be a JSON object (a tool execution)');
    expect(b.json!.error.message).toBe('The request body must be a JSON object (a connected account)');
  });
});

describe('request bodies checked by the endpoint schemas', () => {
  it('names every unknown field, JavaScript built-in names included', async () => {
    const body =
      '{"connection_name":"proto","connector":"helpdesk","__proto__":{"x":1},"constructor":1,"toString":"a","hasOwnProperty":true}';
    const r = await send('POST', '/v1/connections', body);
    expect(r.status).toBe(400);
    expect(r.json!.error.code).toBe('invalid_input');
    const fields = (r.json!.error.details as Array<{ field: string; message: string }>).map((d) => d.field);
    expect(fields.sort()).toEqual(['__proto__', 'constructor', 'hasOwnProperty', 'toString']);
    expect(r.json!.error.details[0].message).toMatch(/^is not a field of a connection \(fields: connection_name, /);
    expect(r.json!.error.message).toMatch(/^Invalid connection: /);
    expect((await send('GET', '/v1/connections/proto')).status).toBe(404);
    for (const [path, method, extra] of [
      ['/v1/tools/execute', 'POST', { ...dryRun, constructor: 'x' }],
      ['/v1/connected-accounts', 'PUT', { connection_name: 'data', identifier: 'u9', credentials: {}, toString: 1 }],
      ['/v1/api-credentials', 'POST', { hasOwnProperty: 'x' }],
    ] as const) {
      const res = await send(method, path, extra);
      expect(res.status, path).toBe(400);
      expect(
        res.json!.error.details.map((d: { field: string }) => d.field),
        path,
      ).toContain(Object.keys(extra).at(-1));
    }
  });

  it('refuses built-in names inside nested objects (api_hosts, oauth, credentials) and stores nothing', async () => {
    await h.client.createConnection({ connection_name: 'docs', connector: 'docs' });
    const before = await h.client.getConnection('docs');
    for (const body of [
      '{"api_hosts":{"__proto__":"http://127.0.0.1:9/x"}}',
      '{"api_hosts":{"constructor":"http://127.0.0.1:9/x"}}',
      '{"api_hosts":{"toString":"http://127.0.0.1:9/x","drive":"http://127.0.0.1:9/y"}}',
      '{"oauth":{"constructor":"http://127.0.0.1:9/x"}}',
    ]) {
      const r = await send('PATCH', '/v1/connections/docs', body);
      expect(r.status, body).toBe(400);
      expect(r.json!.error.details[0].field, body).toMatch(/^(api_hosts|oauth)\.(__proto__|constructor|toString)$/);
    }
    const created = await send(
      'POST',
      '/v1/connections',
      '{"connection_name":"docs2","connector":"docs","api_hosts":{"__proto__":"http://127.0.0.1:9/x"}}',
    );
    expect(created.status).toBe(400);
    expect((await send('GET', '/v1/connections/docs2')).status).toBe(404);
    expect(await h.client.getConnection('docs')).toEqual(before);
    const upsert = await send(
      'PUT',
      '/v1/connected-accounts',
      '{"connection_name":"data","identifier":"u1","credentials":{"api_key":"k-2","__proto__":"x"}}',
    );
    expect(upsert.status).toBe(400);
    expect(upsert.json!.error.details.map((d: { field: string }) => d.field)).toEqual(['credentials.__proto__']);
  });

  it('keeps its messages: required, types, lengths, patterns, and null as not given', async () => {
    const r = await send('POST', '/v1/connections', { connection_name: 'bad name!', connector: null, scopes: 'x' });
    expect(r.json!.error.details).toEqual([
      {
        field: 'connection_name',
        message: 'must be 1-64 characters of letters, digits, _ . - (starting with a letter or digit)',
      },
      { field: 'connector', message: 'is required' },
      { field: 'scopes', message: 'must be an array of strings' },
    ]);
    const e = await send('POST', '/v1/tools/execute', { tool_name: '', dry_run: 'yes', tool_input: null });
    expect(e.json!.error.details).toEqual([
      { field: 'tool_name', message: 'must not be empty' },
      { field: 'dry_run', message: 'must be true or false' },
    ]);
    const q = await send('GET', '/v1/connected-accounts?limit=0&status=NOPE');
    expect(q.json!.error.details).toEqual([
      { field: 'status', message: 'must be one of: PENDING_AUTH, PENDING_VERIFICATION, ACTIVE, EXPIRED, DISCONNECTED' },
      { field: 'limit', message: 'must be an integer from 1 to 1000' },
    ]);
    const twice = await send('GET', '/v1/connected-accounts?identifier=a&identifier=b');
    expect(twice.json!.error.details).toEqual([{ field: 'identifier', message: 'must be a single value' }]);
    // api_base_url: null removes the override (the connection's own rule); an optional field's null is no value.
    const cleared = await send('PATCH', '/v1/connections/a-b.c', { api_base_url: null, auth_kind: null });
    expect(cleared.status, cleared.text).toBe(200);
    expect(cleared.json!.api_base_url).toBeNull();
  });
});
