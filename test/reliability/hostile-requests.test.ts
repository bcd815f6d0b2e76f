/**
 * Hostile requests to the service itself (group "hostile input"): malformed JSON bodies, bodies over
 * BODY_LIMIT_BYTES (plain, chunked and compressed), deeply nested values, identifiers in any script, and line
 * breaks or NUL smuggled into proxy headers and query strings over a raw socket. The service must answer each
 * with a clear 4xx, never a 5xx, and a sentinel upstream must never receive an injected header or request.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { startHarness, TEST_CLIENT_ID, TEST_CLIENT_SECRET, type Harness } from '../helpers/harness.ts';
import { ConnectorServiceError } from '../../packages/client/src/index.ts';
import { ServiceError } from '../../core/errors.ts';
import { Sentinel } from './sentinel.ts';
import { rawExchange, rawHttp } from './raw-socket.ts';
import { record } from './summary.ts';

const LIMIT = 64 * 1024;
let h: Harness;
let sentinel: Sentinel;
let token: string;

beforeAll(async () => {
  h = await startHarness({ env: { BODY_LIMIT_BYTES: String(LIMIT), LOG_LEVEL: 'warn' } });
  sentinel = await new Sentinel().start();
  await h.client.createConnection({ connection_name: 'data', connector: 'prodata', api_base_url: sentinel.url });
  await h.client.upsertConnectedAccount({
    connectionName: 'data',
    identifier: 'plain-user',
    credentials: { api_key: 'key-plain-user' },
  });
  await h.client.createConnection({
    connection_name: 'mailbox',
    connector: 'mail',
    client_id: 'mail-client',
    client_secret: 'mail-client-secret',
  });
  token = (
    (await (
      await fetch(`${h.url}/oauth/token`, {
        method: 'POST',
        body: new URLSearchParams({ client_id: TEST_CLIENT_ID, client_secret: TEST_CLIENT_SECRET }),
      })
    ).json()) as { access_token: string }
  ).access_token;
});
afterAll(async () => {
  await sentinel?.close();
  await h?.close();
});

const auth = () => ({ authorization: `Bearer ${token}` });

/** Sends a body as it is: POST, except the account upsert (PUT). */
async function post(
  path: string,
  body: string | Buffer,
  headers: Record<string, string> = { 'content-type': 'application/json' },
) {
  const res = await fetch(`${h.url}${path}`, {
    method: path === '/v1/connected-accounts' ? 'PUT' : 'POST',
    headers: { ...auth(), ...headers },
    body,
  });
  const text = await res.text();
  let json:
    { error?: { code: string; message: string; details?: Array<{ field: string }> }; request_id?: string } | undefined;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

/** A 4xx in the service's error shape: never a 5xx, never a bare HTML page. */
function expectServiceError(r: Awaited<ReturnType<typeof post>>, what: string) {
  expect(r.status, `${what}: ${r.text.slice(0, 200)}`).toBeGreaterThanOrEqual(400);
  expect(r.status, `${what}: ${r.text.slice(0, 200)}`).toBeLessThan(500);
  expect(typeof r.json?.error?.code, `${what}: ${r.text.slice(0, 200)}`).toBe('string');
  expect(r.json?.request_id).toMatch(/^[\w.-]+$/);
}

const JSON_ENDPOINTS = [
  '/v1/tools/execute',
  '/v1/connections',
  '/v1/connected-accounts',
  '/v1/connected-accounts/authorization-link',
  '/v1/api-credentials',
];

describe('malformed JSON bodies', () => {
  const MALFORMED = [
    '{',
    '{"tool_name": ',
    '{"a":1,}',
    "{'a':1}",
    '{"a": NaN}',
    '{"a": undefined}',
    '[1, 2',
    'nul',
    '"just a string"',
    '42',
    'true',
    'null',
    '{}x',
    '{"a":"\\u00"}',
    '{"a":"\\x41"}',
    '\u0000',
    '\ufeff{"tool_name":"x"}',
    '{"a":1e99999}',
    '['.repeat(40_000),
    `${'{"a":'.repeat(10_000)}1`,
  ];

  it('answers each with a 4xx naming the problem, on every JSON endpoint', async () => {
    let tried = 0;
    let failed = 0;
    try {
      for (const path of JSON_ENDPOINTS) {
        for (const body of MALFORMED) {
          tried++;
          expectServiceError(await post(path, body), `${path} ${JSON.stringify(body.slice(0, 30))}`);
        }
      }
    } catch (e) {
      failed++;
      throw e;
    } finally {
      record({
        category: 'inputs fuzzed',
        what: `malformed JSON bodies (${MALFORMED.length} kinds × ${JSON_ENDPOINTS.length} endpoints)`,
        tried,
        failed,
      });
    }
    const r = await post('/v1/tools/execute', '{"tool_name": ');
    expect(r.json!.error!.code).toBe('invalid_json');
  });

  it('answers generated garbage and mutated JSON with a 4xx, never a 5xx', async () => {
    const valid = JSON.stringify({
      tool_name: 'prodata_scrape_profile',
      tool_input: { profile_url: 'https://www.linkedin.com/in/x' },
      connection_name: 'data',
      identifier: 'plain-user',
      dry_run: true,
    });
    const mutated = fc
      .tuple(fc.nat({ max: valid.length - 1 }), fc.nat({ max: 20 }), fc.string({ unit: 'binary', maxLength: 4 }))
      .map(([at, drop, insert]) => valid.slice(0, at) + insert + valid.slice(at + drop));
    const garbage = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
      mutated,
      fc.json(),
    );
    let tried = 0;
    let failed = 0;
    try {
      await fc.assert(
        fc.asyncProperty(garbage, fc.constantFrom(...JSON_ENDPOINTS), async (body, path) => {
          tried++;
          const r = await post(path, body);
          expect(r.status, `${path}: ${r.text.slice(0, 200)}`).toBeLessThan(500);
          if (r.status >= 400) expectServiceError(r, path);
        }),
        { numRuns: 300 },
      );
    } catch (e) {
      failed++;
      throw e;
    } finally {
      record({ category: 'inputs fuzzed', what: 'generated garbage and mutated JSON bodies', tried, failed });
    }
  });

  it("answers generated values for each endpoint's own fields, and generated query strings, without a 5xx", async () => {
    const hostile = fc.oneof(
      fc.constantFrom(
        'data',
        'prodata',
        'mail',
        'mailbox',
        'plain-user',
        'api_key',
        'oauth2',
        '__proto__',
        'constructor',
        '',
        ' ',
        'javascript:alert(1)',
        'http://169.254.169.254/',
        'https://{domain}/x',
        '\ud800',
        'a\u0000b',
        '../..',
      ),
      fc.string({ maxLength: 12 }),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.oneof(fc.string({ maxLength: 6 }), fc.integer()), { maxLength: 3 }),
      fc.dictionary(
        fc.constantFrom(
          'api_key',
          'domain',
          'authorize_url',
          'token_url',
          'resource',
          'access_token',
          '__proto__',
          'x',
        ),
        fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.constant('https://evil.example')),
        { maxKeys: 3 },
      ),
    );
    const FIELDS: Record<string, { method: string; path: string; fields: string[] }> = {
      connection: {
        method: 'POST',
        path: '/v1/connections',
        fields: [
          'connection_name',
          'connector',
          'auth_kind',
          'client_id',
          'client_secret',
          'scopes',
          'api_base_url',
          'api_hosts',
          'oauth',
        ],
      },
      'connection update': {
        method: 'PATCH',
        path: '/v1/connections/mailbox',
        fields: [
          'connection_name',
          'connector',
          'auth_kind',
          'client_id',
          'client_secret',
          'scopes',
          'api_hosts',
          'oauth',
        ],
      },
      account: { method: 'POST', path: '/v1/connected-accounts', fields: ['connection_name', 'identifier'] },
      upsert: {
        method: 'PUT',
        path: '/v1/connected-accounts',
        fields: ['connection_name', 'identifier', 'credentials', 'verify'],
      },
      link: {
        method: 'POST',
        path: '/v1/connected-accounts/authorization-link',
        fields: ['connection_name', 'identifier', 'redirect_url'],
      },
      execute: {
        method: 'POST',
        path: '/v1/tools/execute',
        fields: ['tool_name', 'tool_input', 'connected_account_id', 'connection_name', 'identifier', 'dry_run'],
      },
      credential: { method: 'POST', path: '/v1/api-credentials', fields: ['name'] },
    };
    const bodyCase = fc
      .constantFrom(...Object.keys(FIELDS))
      .chain((kind) =>
        fc.tuple(
          fc.constant(kind),
          fc.subarray(FIELDS[kind]!.fields),
          fc.array(hostile, { minLength: 9, maxLength: 9 }),
        ),
      );
    const queryCase = fc.tuple(
      fc.constantFrom(
        '/v1/connected-accounts',
        '/v1/tools',
        '/v1/connections/data',
        '/v1/connections/mailbox',
        '/v1/connected-accounts/x',
        '/v1/tools/x',
      ),
      fc.array(
        fc.tuple(
          fc.constantFrom('connection_name', 'identifier', 'status', 'limit', 'cursor', 'connector'),
          fc.oneof(
            fc.string({ maxLength: 10 }),
            fc.constantFrom('0', '-1', '1e3', 'NaN', '99999999999', 'MDo', 'eA', '%ZZ', 'ACTIVE', 'data'),
          ),
        ),
        { maxLength: 4 },
      ),
    );
    let tried = 0;
    let failed = 0;
    try {
      await fc.assert(
        fc.asyncProperty(bodyCase, async ([kind, fields, values]) => {
          tried++;
          const body: Record<string, unknown> = {};
          fields.forEach((f, i) => (body[f] = values[i]));
          const { method, path } = FIELDS[kind]!;
          const res = await fetch(`${h.url}${path}`, {
            method,
            headers: { ...auth(), 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          expect(
            res.status,
            `${method} ${path} ${JSON.stringify(body).slice(0, 300)}: ${(await res.clone().text()).slice(0, 200)}`,
          ).toBeLessThan(500);
        }),
        { numRuns: 300 },
      );
      await fc.assert(
        fc.asyncProperty(queryCase, async ([path, pairs]) => {
          tried++;
          const res = await fetch(`${h.url}${path}?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`, {
            headers: auth(),
          });
          expect(res.status, `${path} ${JSON.stringify(pairs)}`).toBeLessThan(500);
        }),
        { numRuns: 150 },
      );
    } catch (e) {
      failed++;
      throw e;
    } finally {
      record({
        category: 'inputs fuzzed',
        what: "management API: each endpoint's own fields and query strings, generated values",
        tried,
        failed,
      });
    }
  });

  it('refuses bodies that are not JSON objects, and unsupported encodings, with 4xx', async () => {
    for (const [body, headers] of [
      ['[]', { 'content-type': 'application/json' }],
      ['tool_name=x', { 'content-type': 'application/x-www-form-urlencoded' }],
      ['{"tool_name":"x"}', { 'content-type': 'text/plain' }],
      ['{"tool_name":"x"}', { 'content-type': 'application/json; charset=latin1' }],
      ['{"tool_name":"x"}', { 'content-type': 'application/json', 'content-encoding': 'br' }],
      ['not gzip at all', { 'content-type': 'application/json', 'content-encoding': 'gzip' }],
    ] as Array<[string, Record<string, string>]>) {
      expectServiceError(
        await post('/v1/tools/execute', body, headers),
        `${headers['content-type']} ${headers['content-encoding'] ?? ''}`,
      );
    }
  });
});

describe(`bodies over BODY_LIMIT_BYTES (${LIMIT})`, () => {
  const bodyOf = (size: number) => {
    const head = '{"tool_name":"prodata_scrape_profile","tool_input":{"profile_url":"';
    const tail = '"},"connection_name":"data","identifier":"plain-user","dry_run":true}';
    return head + 'x'.repeat(size - head.length - tail.length) + tail;
  };

  it('accepts a body at the limit and refuses one byte more with 413', async () => {
    const at = await post('/v1/tools/execute', bodyOf(LIMIT));
    expect(at.status, at.text.slice(0, 200)).not.toBe(413);
    const over = await post('/v1/tools/execute', bodyOf(LIMIT + 1));
    expect(over.status).toBe(413);
    expect(over.json!.error!.code).toBe('payload_too_large');
  });

  it('refuses a chunked body without Content-Length, and a small gzip body that inflates past the limit', async () => {
    const big = Buffer.from(bodyOf(LIMIT * 4));
    const chunked = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < big.length; i += 8192) c.enqueue(big.subarray(i, i + 8192));
        c.close();
      },
    });
    const res = await fetch(`${h.url}/v1/tools/execute`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: chunked,
      duplex: 'half',
    });
    expect(res.status).toBe(413);
    const bomb = gzipSync(Buffer.from(bodyOf(LIMIT * 64)));
    expect(bomb.length).toBeLessThan(LIMIT);
    const inflated = await post('/v1/tools/execute', bomb, {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
    });
    expect(inflated.status).toBe(413);
    // The token endpoint has its own, smaller limit.
    const token = await fetch(`${h.url}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({ client_id: 'x', client_secret: 'y'.repeat(20_000) }),
    });
    expect(token.status).toBe(413);
    record({
      category: 'inputs fuzzed',
      what: 'oversized bodies (at limit, limit+1, chunked, gzip bomb, token endpoint)',
      tried: 5,
      failed: 0,
    });
  });
});

describe('deeply nested values', () => {
  const nestedArrays = (n: number) => '['.repeat(n) + ']'.repeat(n);

  it('refuses a tool input nested 30,000 deep with a 400 naming the field, over HTTP and in process', async () => {
    const body = `{"tool_name":"scraper_call_actor","tool_input":{"actor":"apify/web-scraper","input":{"x":${nestedArrays(30_000)}}},"connection_name":"data","identifier":"plain-user","dry_run":true}`;
    expect(body.length).toBeLessThan(LIMIT);
    const r = await post('/v1/tools/execute', body);
    expect(r.status, r.text.slice(0, 300)).toBe(400);
    expect(r.json!.error!.code).toBe('invalid_input');
    expect(r.json!.error!.details![0]!.field).toMatch(/^input\.x(\[0\])+$/);
    expect(r.json!.error!.message).toContain('nests deeper than');

    let deep: unknown = 'bottom';
    for (let i = 0; i < 200_000; i++) deep = { a: deep };
    const e = await h.running.services.executor
      .execute({
        toolName: 'scraper_call_actor',
        input: { actor: 'apify/web-scraper', input: deep },
        dryRun: true,
        account: { connectionName: 'data', identifier: 'plain-user' },
      })
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ServiceError);
    expect((e as ServiceError).status).toBe(400);
  });

  it('reports at most 50 problems, however many a large input has', async () => {
    const tags = Array.from({ length: 8_000 }, (_, i) => i);
    const body = JSON.stringify({
      tool_name: 'helpdesk_ticket_create',
      tool_input: { comment_body: 'x', tags },
      connection_name: 'data',
      identifier: 'plain-user',
      dry_run: true,
    });
    expect(body.length).toBeLessThan(LIMIT);
    const r = await post('/v1/tools/execute', body);
    expect(r.status).toBe(400);
    expect(r.json!.error!.details!.length).toBe(50);
    expect(r.text.length).toBeLessThan(body.length);
  });

  it('answers deep values on every other JSON endpoint with a 4xx', async () => {
    const deepValue = nestedArrays(25_000);
    const bodies: Record<string, string> = {
      '/v1/connections': `{"connection_name":"deep","connector":"prodata","oauth":${deepValue}}`,
      '/v1/connected-accounts': `{"connection_name":"data","identifier":"deep","credentials":{"api_key":${deepValue}}}`,
      '/v1/connected-accounts/authorization-link': `{"connection_name":"data","identifier":${deepValue}}`,
      '/v1/api-credentials': `{"name":${deepValue}}`,
      '/v1/tools/execute': `{"tool_name":"prodata_scrape_profile","tool_input":${deepValue},"connection_name":"data","identifier":"plain-user"}`,
    };
    for (const [path, body] of Object.entries(bodies)) expectServiceError(await post(path, body), path);
    record({ category: 'inputs fuzzed', what: 'deeply nested bodies (25,000-200,000 levels)', tried: 7, failed: 0 });
  });
});

describe('identifiers in any script round-trip', () => {
  const FIXED = [
    'ünïcode user ✓',
    'e\u0301', // NFD
    '\u00e9', // NFC: another user than the NFD spelling
    '😀 emoji',
    'עברית RTL',
    '  leading and trailing spaces  ',
    'a%41 literal percent',
    '%E2%9C%93',
    'comma, semicolon; "quotes"',
    'Ω'.repeat(255),
    '\u200d zero width joiner',
  ];
  const identifier = fc
    .oneof(
      fc.constantFrom(...FIXED),
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }),
    )
    // eslint-disable-next-line no-control-regex -- control characters are what the test looks for
    .filter((s) => s.length <= 255 && !/[\u0000-\u001f\u007f]/.test(s) && !/[\uD800-\uDFFF]/u.test(s));

  it('creates, finds, lists, runs tools and proxies for the same account', async () => {
    let n = 0;
    let tried = 0;
    let failed = 0;
    const seen = new Map<string, string>();
    try {
      await fc.assert(
        fc.asyncProperty(identifier, async (id) => {
          tried++;
          const key = `key-${++n}-${Date.now()}`;
          const created = await h.client.upsertConnectedAccount({
            connectionName: 'data',
            identifier: id,
            credentials: { api_key: key },
          });
          expect(created.identifier).toBe(id);
          if (seen.has(id)) expect(created.id).toBe(seen.get(id));
          else expect([...seen.values()]).not.toContain(created.id);
          seen.set(id, created.id);
          const again = await h.client.getOrCreateConnectedAccount({ connectionName: 'data', identifier: id });
          expect(again.id).toBe(created.id);
          expect((await h.client.getConnectedAccount(created.id)).identifier).toBe(id);
          const listed = await h.client.listConnectedAccounts({ connectionName: 'data', identifier: id });
          expect(listed.connected_accounts.map((a) => a.id)).toEqual([created.id]);
          // The proxy and a live tool call reach the upstream with this account's key, so they found this account.
          const before = sentinel.requests.length;
          const res = await h.client.request({ connectionName: 'data', identifier: id, path: '/echo' });
          expect(res.status).toBe(200);
          await h.client.executeTool({
            toolName: 'prodata_scrape_profile' as never,
            toolInput: { profile_url: 'https://www.linkedin.com/in/x' } as never,
            connectionName: 'data',
            identifier: id,
          });
          expect(sentinel.requests.slice(before).map((r) => r.headers.find(([k]) => k === 'x-api-key')?.[1])).toEqual([
            key,
            key,
          ]);
        }),
        { numRuns: 40, examples: FIXED.map((f) => [f]) },
      );
    } catch (e) {
      failed++;
      throw e;
    } finally {
      record({
        category: 'inputs fuzzed',
        what: 'identifiers in any script (create, get, list, tool, proxy)',
        tried,
        failed,
      });
    }
    expect(seen.get('e\u0301')).not.toBe(seen.get('\u00e9'));
  });

  it('refuses identifiers that could not be stored as given, and malformed encoded ones', async () => {
    for (const bad of ['\ud800', 'a\udfffb', 'tab\there', 'nul\u0000', 'x'.repeat(256), '']) {
      const e = await h.client
        .getOrCreateConnectedAccount({ connectionName: 'data', identifier: bad })
        .catch((x: unknown) => x);
      expect(e, JSON.stringify(bad)).toBeInstanceOf(ConnectorServiceError);
      expect((e as ConnectorServiceError).status).toBe(400);
      expect((e as ConnectorServiceError).details[0]!.field).toBe('identifier');
    }
    const base = { ...auth(), connection_name: 'data' };
    const attempts: Array<Record<string, string>> = [
      { 'x-identifier-encoded': '%E2%9C' },
      { 'x-identifier-encoded': '%ED%A0%80' },
      { 'x-identifier-encoded': 'plain-user', identifier: 'plain-user' },
    ];
    for (const headers of attempts) {
      const before = sentinel.requests.length;
      const res = await fetch(`${h.url}/proxy/echo`, { headers: { ...base, ...headers } });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { details: Array<{ field: string }> } }).error.details[0]!.field).toBe(
        'x-identifier-encoded',
      );
      expect(sentinel.requests.length).toBe(before);
    }
  });
});

describe('line breaks and NUL in proxy headers and query strings', () => {
  const target = (path = '/proxy/echo') => `GET ${path} HTTP/1.1`;
  const base = () => [
    `Host: ${new URL(h.url).host}`,
    `Authorization: Bearer ${token}`,
    'connection_name: data',
    'identifier: plain-user',
  ];

  it('never lets a header value or query become another header or request upstream', async () => {
    const attacks: Array<[string, string]> = [
      ['obs-fold continuation', rawHttp(target(), [...base(), 'X-Custom: a', ' X-Injected: folded'])],
      ['bare CR in a value', rawHttp(target(), [...base(), 'X-Custom: a\rX-Injected: cr'])],
      ['bare LF in a value', rawHttp(target(), [...base(), 'X-Custom: a\nX-Injected: lf'])],
      ['NUL in a value', rawHttp(target(), [...base(), 'X-Custom: a\u0000X-Injected: nul'])],
      ['CR in a header name', rawHttp(target(), [...base(), 'X-Custom\r: a'])],
      ['space before the colon', rawHttp(target(), [...base(), 'X-Injected : space'])],
      ['CRLF in the request target', rawHttp(`GET /proxy/echo?q=a\r\nX-Injected: target HTTP/1.1`, base())],
      ['bare CR in the request target', rawHttp(`GET /proxy/echo?q=a\rX-Injected:%20cr HTTP/1.1`, base())],
      ['NUL in the request target', rawHttp(`GET /proxy/echo?q=a\u0000b HTTP/1.1`, base())],
      ['space in the request target', rawHttp(`GET /proxy/echo?q=a HTTP/1.1 X-Injected: sp HTTP/1.1`, base())],
      [
        'Content-Length with Transfer-Encoding',
        rawHttp(
          'POST /proxy/echo HTTP/1.1',
          [...base(), 'Content-Length: 4', 'Transfer-Encoding: chunked'],
          '0\r\n\r\nGET /smuggled HTTP/1.1\r\nX-Injected: smuggled\r\n\r\n',
        ),
      ],
      [
        'two Content-Length headers',
        rawHttp('POST /proxy/echo HTTP/1.1', [...base(), 'Content-Length: 4', 'Content-Length: 60'], 'abcd'),
      ],
      [
        'Transfer-Encoding obfuscated',
        rawHttp('POST /proxy/echo HTTP/1.1', [...base(), 'Transfer-Encoding: xchunked'], '0\r\n\r\n'),
      ],
    ];
    const before = sentinel.requests.length;
    let forwarded = 0;
    const outcomes: string[] = [];
    for (const [name, request] of attacks) {
      const res = await rawExchange(h.url, request);
      outcomes.push(`${name}: ${res.status}`);
      // Refused by the HTTP parser or by the proxy (4xx), or forwarded as one intact request.
      expect(res.status === 200 || (res.status >= 400 && res.status < 500), `${name}: ${res.raw.slice(0, 200)}`).toBe(
        true,
      );
      if (res.status === 200) forwarded++;
    }
    // Encoded line breaks stay encoded: the upstream sees the same bytes and no extra header.
    const encoded = await rawExchange(
      h.url,
      rawHttp(target('/proxy/echo?q=a%0d%0aX-Injected:%20encoded&r=%00'), base()),
    );
    expect(encoded.status).toBe(200);
    forwarded++;
    const seen = sentinel.requests.slice(before);
    expect(seen.length, outcomes.join('; ')).toBe(forwarded);
    expect(sentinel.headerValues('x-injected')).toEqual([]);
    for (const r of seen) {
      // eslint-disable-next-line no-control-regex -- control characters are what the test looks for
      expect(r.url).not.toMatch(/[\r\n\u0000 ]/);
      expect(r.url.startsWith('/echo')).toBe(true);
      // eslint-disable-next-line no-control-regex -- control characters are what the test looks for
      for (const [k, v] of r.headers) expect(`${k}: ${v}`).not.toMatch(/[\r\n\u0000]/);
    }
    expect(seen.at(-1)!.url).toBe('/echo?q=a%0d%0aX-Injected:%20encoded&r=%00');
    record({
      category: 'inputs fuzzed',
      what: 'CR/LF/NUL in proxy headers, targets and framing (raw socket)',
      tried: attacks.length + 1,
      failed: 0,
      detail: outcomes.join('; '),
    });
  });

  it('refuses line breaks before sending through the client library, and encodes them in query values', async () => {
    const before = sentinel.requests.length;
    await expect(
      h.client.request({
        connectionName: 'data',
        identifier: 'plain-user',
        path: '/echo',
        headers: { 'x-custom': 'a\r\nX-Injected: client' },
      }),
    ).rejects.toThrow();
    const res = await h.client.request({
      connectionName: 'data',
      identifier: 'plain-user',
      path: '/echo',
      queryParams: { q: 'a\r\nX-Injected: query' },
    });
    expect(res.status).toBe(200);
    expect(sentinel.requests.length).toBe(before + 1);
    expect(sentinel.requests.at(-1)!.url).toBe('/echo?q=a%0D%0AX-Injected%3A+query');
    expect(sentinel.headerValues('x-injected')).toEqual([]);
  });
});

describe('JavaScript built-in names as field names (issue 12, point 6)', () => {
  const BUILTINS = ['constructor', 'toString', 'hasOwnProperty', '__proto__', 'valueOf', 'isPrototypeOf'];
  /** A JSON object text whose first key is `name` (JSON.stringify would drop nothing, but spell it out). */
  const withKey = (base: Record<string, unknown>, name: string, value: unknown) =>
    `{${JSON.stringify(name)}: ${JSON.stringify(value)}, ${JSON.stringify(base).slice(1)}`;

  /** Asserts a 400 invalid_input whose details name `field`. */
  async function refusedNaming(method: string, path: string, body: string | undefined, field: string) {
    const res = await fetch(`${h.url}${path}`, {
      method,
      headers: { ...auth(), 'content-type': 'application/json' },
      body,
    });
    const text = await res.text();
    expect(res.status, `${method} ${path} ${body}: ${text.slice(0, 300)}`).toBe(400);
    const json = JSON.parse(text) as { error: { code: string; details?: Array<{ field: string }> } };
    expect(json.error.code).toBe('invalid_input');
    expect(
      json.error.details?.map((d) => d.field),
      `${method} ${path} ${body}: ${text.slice(0, 300)}`,
    ).toContain(field);
  }

  let tried = 0;
  let failed = 0;
  afterAll(() =>
    record({
      category: 'attacks tried',
      what: 'built-in names (constructor, __proto__, …) as request fields',
      tried,
      failed,
    }),
  );
  const counted = async (fn: () => Promise<void>) => {
    tried++;
    try {
      await fn();
    } catch (e) {
      failed++;
      throw e;
    }
  };

  it('refuses them as unknown top-level fields of every JSON body', async () => {
    const bodies: Array<[string, string, Record<string, unknown>]> = [
      [
        'POST',
        '/v1/tools/execute',
        {
          tool_name: 'prodata_search_people',
          connection_name: 'data',
          identifier: 'plain-user',
          tool_input: {},
          dry_run: true,
        },
      ],
      ['POST', '/v1/connections', { connection_name: 'proto-test', connector: 'prodata' }],
      ['PATCH', '/v1/connections/data', { api_base_url: sentinel.url }],
      ['POST', '/v1/connected-accounts', { connection_name: 'data', identifier: 'plain-user' }],
      [
        'PUT',
        '/v1/connected-accounts',
        { connection_name: 'data', identifier: 'plain-user', credentials: { api_key: 'k' } },
      ],
      ['POST', '/v1/connected-accounts/authorization-link', { connection_name: 'mailbox', identifier: 'u' }],
      ['POST', '/v1/api-credentials', { name: 'proto-test' }],
    ];
    for (const [method, path, base] of bodies)
      for (const name of BUILTINS) await counted(() => refusedNaming(method, path, withKey(base, name, 'x'), name));
  });

  it('refuses them inside tool_input, api_hosts, oauth and credentials, storing nothing', async () => {
    for (const name of BUILTINS) {
      await counted(() =>
        refusedNaming(
          'POST',
          '/v1/tools/execute',
          JSON.stringify({
            tool_name: 'prodata_search_people',
            connection_name: 'data',
            identifier: 'plain-user',
            dry_run: true,
          }).replace(/}$/, `, "tool_input": ${withKey({ search: 'x' }, name, 'x')}}`),
          name,
        ),
      );
      await counted(() =>
        refusedNaming(
          'POST',
          '/v1/connections',
          `{"connection_name": "proto-${tried}", "connector": "prodata", "api_hosts": {${JSON.stringify(name)}: "http://127.0.0.1:1/"}}`,
          `api_hosts.${name}`,
        ),
      );
      await counted(() =>
        refusedNaming(
          'PATCH',
          '/v1/connections/data',
          `{"api_hosts": {${JSON.stringify(name)}: "http://127.0.0.1:1/"}}`,
          `api_hosts.${name}`,
        ),
      );
      await counted(() =>
        refusedNaming(
          'PATCH',
          '/v1/connections/mailbox',
          `{"oauth": {${JSON.stringify(name)}: "http://127.0.0.1:1/"}}`,
          `oauth.${name}`,
        ),
      );
      await counted(() =>
        refusedNaming(
          'PUT',
          '/v1/connected-accounts',
          `{"connection_name": "data", "identifier": "proto-user", "credentials": ${withKey({ api_key: 'k' }, name, 'x')}}`,
          `credentials.${name}`,
        ),
      );
    }
    const conn = (await (await fetch(`${h.url}/v1/connections/data`, { headers: auth() })).json()) as Record<
      string,
      unknown
    >;
    expect(JSON.stringify(conn)).not.toContain('127.0.0.1:1');
    const accounts = await fetch(`${h.url}/v1/connected-accounts?connection_name=data&identifier=proto-user`, {
      headers: auth(),
    });
    expect(((await accounts.json()) as { connected_accounts: unknown[] }).connected_accounts).toEqual([]);
    const list = await fetch(`${h.url}/v1/connections`, { headers: auth() });
    expect(await list.text()).not.toContain('proto-');
  });

  it('answers them as names (tools, connectors, connections, statuses) like any unknown name, never a 5xx', async () => {
    for (const name of BUILTINS) {
      const enc = encodeURIComponent(name);
      const cases: Array<[string, string, string | undefined, number]> = [
        ['GET', `/v1/tools/${enc}`, undefined, 404],
        ['GET', `/v1/connectors/${enc}`, undefined, 404],
        ['GET', `/v1/connections/${enc}`, undefined, 404],
        ['GET', `/v1/tools?connector=${enc}`, undefined, 400],
        ['GET', `/v1/connected-accounts?status=${enc}`, undefined, 400],
        ['GET', `/v1/connected-accounts?connection_name=${enc}`, undefined, 404],
        [
          'POST',
          '/v1/tools/execute',
          JSON.stringify({ tool_name: name, connection_name: 'data', identifier: 'u', tool_input: {} }),
          404,
        ],
        ['POST', '/v1/connections', JSON.stringify({ connection_name: `c-${tried}`, connector: name }), 400],
        [
          'POST',
          '/v1/connections',
          JSON.stringify({ connection_name: `c-${tried}`, connector: 'prodata', auth_kind: name }),
          400,
        ],
        ['POST', '/v1/connected-accounts', JSON.stringify({ connection_name: name, identifier: 'u' }), 404],
        [
          'PUT',
          '/v1/connected-accounts',
          JSON.stringify({ connection_name: 'data', identifier: name, credentials: { api_key: 'k' } }),
          200,
        ],
      ];
      for (const [method, path, body, status] of cases)
        await counted(async () => {
          const res = await fetch(`${h.url}${path}`, {
            method,
            headers: { ...auth(), 'content-type': 'application/json' },
            body,
          });
          expect(res.status, `${method} ${path} ${body ?? ''}: ${(await res.text()).slice(0, 300)}`).toBe(status);
        });
    }
  });
});
