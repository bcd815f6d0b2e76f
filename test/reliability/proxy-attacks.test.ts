/**
 * Attacks on the proxy's confinement (group "proxy and OAuth security"): path traversal in every encoding,
 * absolute URLs and host tricks in the path and the request target, support-desk domains that are not what
 * they seem (IP literals, private ranges, the metadata address, IPv6, lookalikes — and names under
 * *.zendesk.com that RESOLVE to private addresses, checked with a resolver the test controls), redirects from a
 * malicious upstream, and client headers that try to set credentials or forwarding information.
 * Every refused attack is checked against a sentinel upstream that must record nothing.
 */
import { isIP } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { startHarness, TEST_CLIENT_ID, TEST_CLIENT_SECRET, type Harness } from '../helpers/harness.ts';
import { ConnectorServiceError } from '../../packages/client/src/index.ts';
import { guardedLookup, isPublicAddress, upstreamDns } from '../../runtime/upstream/address-guard.ts';
import { Sentinel } from './sentinel.ts';
import { rawExchange, rawHttp } from './raw-socket.ts';
import { record, tallied, type Tally } from './summary.ts';

let h: Harness;
let sentinel: Sentinel;
let other: Sentinel;
let token: string;
const DOMAIN = 'acme.zendesk.com';
const ROOT = `/root/${DOMAIN}/api`;
const DESK_CREDS = { domain: DOMAIN, email: 'agent@acme.com', api_token: 'desk-token-3f9a1c' };
const DATA_KEY = 'data-api-key-77aa';
const originalLookup = upstreamDns.lookup;

/** The test's DNS: names under *.zendesk.com that point into private space, and what was asked. */
const DNS: Record<string, string[]> = {
  'loop.zendesk.com': ['127.0.0.1'],
  'ten.zendesk.com': ['10.1.2.3'],
  'corp.zendesk.com': ['172.20.0.5'],
  'home.zendesk.com': ['192.168.1.10'],
  'meta.zendesk.com': ['169.254.169.254'],
  'cgnat.zendesk.com': ['100.64.0.1'],
  'zero.zendesk.com': ['0.0.0.0'],
  'v6loop.zendesk.com': ['::1'],
  'v6ula.zendesk.com': ['fd00::1'],
  'v6link.zendesk.com': ['fe80::1'],
  'mapped.zendesk.com': ['::ffff:127.0.0.1'],
  'mixed.zendesk.com': ['93.184.216.34', '127.0.0.1'],
  localhost: ['127.0.0.1'],
};
const asked: string[] = [];

const tally: Tally = { tried: 0, failed: 0 };
/** Runs one attack (or a group of them, counted as `count`) and records whether it held. */
function counted(_what: string, fn: () => Promise<void>, count = 1): () => Promise<void> {
  return () => tallied(tally, count, fn);
}

beforeAll(async () => {
  h = await startHarness({ env: { LOG_LEVEL: 'warn' } });
  sentinel = await new Sentinel().start();
  other = await new Sentinel().start();
  upstreamDns.lookup = ((
    hostname: string,
    _options: unknown,
    cb: (e: NodeJS.ErrnoException | null, a: LookupAddress[]) => void,
  ) => {
    asked.push(hostname);
    const addresses = DNS[hostname];
    if (!addresses) return cb(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
    cb(
      null,
      addresses.map((address) => ({ address, family: isIP(address) })),
    );
  }) as never;
  await h.client.createConnection({
    connection_name: 'desk',
    connector: 'helpdesk',
    api_base_url: `${sentinel.url}/root/{domain}/api`,
  });
  await h.client.upsertConnectedAccount({ connectionName: 'desk', identifier: 'u', credentials: DESK_CREDS });
  await h.client.createConnection({ connection_name: 'desk-real', connector: 'helpdesk' });
  await h.client.upsertConnectedAccount({ connectionName: 'desk-real', identifier: 'u', credentials: DESK_CREDS });
  // The operator picks scheme and port; the host is the account's domain, so it is checked at lookup time.
  await h.client.createConnection({
    connection_name: 'desk-dns',
    connector: 'helpdesk',
    api_base_url: `http://{domain}:${sentinel.port}/api`,
  });
  await h.client.createConnection({ connection_name: 'data', connector: 'prodata', api_base_url: sentinel.url });
  await h.client.upsertConnectedAccount({
    connectionName: 'data',
    identifier: 'u',
    credentials: { api_key: DATA_KEY },
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
  upstreamDns.lookup = originalLookup;
  record({
    category: 'attacks tried',
    what: 'proxy confinement: traversal, hosts, DNS, redirects, headers',
    tried: tally.tried,
    failed: tally.failed,
  });
  await sentinel?.close();
  await other?.close();
  await h?.close();
});

const proxyHeaders = (connection = 'desk') => [
  `Host: ${new URL(h.url).host}`,
  `Authorization: Bearer ${token}`,
  `connection_name: ${connection}`,
  'identifier: u',
];

/** Sends `GET /proxy<path>` exactly as written. */
async function proxyRaw(path: string, connection = 'desk') {
  return rawExchange(h.url, rawHttp(`GET /proxy${path} HTTP/1.1`, proxyHeaders(connection)));
}

/** Every decoding of a path, as a server behind the provider might see it. */
function decodings(path: string): string[] {
  const out = [path];
  for (let i = 0; i < 4; i++) {
    const next = out.at(-1)!.replace(/%([0-9a-f]{2})/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (next === out.at(-1)) break;
    out.push(next);
  }
  return out;
}

/** The test's own idea of a traversal: a dot segment, a slash or backslash that was encoded, a control byte, a scheme. */
function looksHostile(path: string): boolean {
  return decodings(path).some(
    (d, i) =>
      d.split(/[/\\]/).some((s) => /^\.\.?(;.*)?$/.test(s)) ||
      /\\|%2f|%5c/i.test(d) ||
      // eslint-disable-next-line no-control-regex -- control characters are what the test looks for
      (i > 0 && /[\u0000-\u001f\u007f]/.test(d)) ||
      d.includes('://') ||
      /^\/[a-z][a-z0-9+.-]*:/i.test(d),
  );
}

describe('path traversal and absolute URLs in the proxy path', () => {
  const FIXED = [
    '/../x',
    '/..',
    '/.',
    '/v2/../../x',
    '/v2/./x',
    '/v2/tickets/..',
    '/v2/%2e%2e/x',
    '/v2/%2E%2E/x',
    '/v2/.%2e/x',
    '/v2/%2e./x',
    '/v2/%2e/x',
    '/v2/%252e%252e/x',
    '/v2/%25252e%25252e/x',
    '/v2/%2525252e%2525252e/x',
    '/v2%2f..%2fx',
    '/v2%2F..',
    '/v2/..%2fx',
    '/v2/%252f..%252fx',
    '/v2/..\\x',
    '/v2/%5c..%5cx',
    '/v2/%255c',
    '/v2/..;/x',
    '/v2/%2e%2e;jsessionid=1/x',
    '/v2/%c0%ae%c0%ae/x',
    '/v2/%e0%80%ae%e0%80%ae/x',
    '/v2/%c0%af',
    '/v2/%ZZ',
    '/v2/%',
    '/v2/x%00.json',
    '/v2/x%0d%0aX-Injected:%201',
    '//evil.example/x',
    '///evil.example/x',
    '/\\evil.example/x',
    '/%2f%2fevil.example/x',
    '/https://evil.example/x',
    '/http:/evil.example',
    '/https%3A%2F%2Fevil.example',
    '/https%3A//evil.example',
    '/javascript:alert(1)',
    '/@evil.example/x',
    '/v2@evil.example/x',
    '/:@evil.example',
    '/acme.zendesk.com@evil.example/x',
  ];

  it.each(FIXED.map((p) => [p]))('refuses %s with 400 and sends nothing', async (path) => {
    await counted(path, async () => {
      const before = sentinel.requests.length;
      const res = await proxyRaw(path);
      expect(res.status, res.raw.slice(0, 300)).toBe(400);
      expect(res.raw).toMatch(/x-error-source: service/i);
      expect(sentinel.requests.length).toBe(before);
    })();
  });

  it('refuses absolute-form and authority-form request targets', async () => {
    await counted('absolute targets', async () => {
      const before = sentinel.requests.length;
      for (const line of [
        `GET http://evil.example/proxy/v2/x HTTP/1.1`,
        `GET http://${new URL(h.url).host}/proxy//evil.example/x HTTP/1.1`,
        `CONNECT evil.example:443 HTTP/1.1`,
      ]) {
        const res = await rawExchange(h.url, rawHttp(line, proxyHeaders()));
        // A 4xx, or (CONNECT, which Node hands to no handler) the connection closed unanswered.
        expect(res.status === 0 || (res.status >= 400 && res.status < 500), `${line}: ${res.raw.slice(0, 200)}`).toBe(
          true,
        );
      }
      expect(sentinel.requests.length).toBe(before);
    })();
  });

  it('keeps generated paths under the API root: hostile ones refused, the rest forwarded intact', async () => {
    const segment = fc.oneof(
      fc.constantFrom(
        '..',
        '.',
        '%2e%2e',
        '%2E%2e',
        '.%2e',
        '%2e',
        '%252e%252e',
        '%25252e',
        '%2f',
        '%2F',
        '%252f',
        '%5c',
        '%255C',
        '\\',
        '..;',
        '%2e%2e;x',
        '%00',
        '%0a',
        '@',
        ':',
        '%40',
        '%3a',
        'x',
        'v2',
        'tickets',
        '%20',
        '%25',
        '~',
        'a.b',
        '...',
        '.x',
        'x.',
      ),
      fc.stringMatching(/^[A-Za-z0-9._~-]{1,8}$/),
    );
    const path = fc.array(segment, { minLength: 1, maxLength: 5 }).map((s) => `/${s.join('/')}`);
    let refused = 0;
    let forwarded = 0;
    await fc.assert(
      fc.asyncProperty(path, async (p) => {
        tally.tried++;
        const before = sentinel.requests.length;
        const res = await proxyRaw(p);
        if (looksHostile(p)) {
          expect(res.status, `${p} must be refused: ${res.raw.slice(0, 200)}`).toBe(400);
          expect(sentinel.requests.length).toBe(before);
          refused++;
          return;
        }
        // Anything else must arrive below the root, as sent; a 400 is fine only for a malformed encoding.
        if (res.status === 400) {
          expect(res.body).toMatch(/malformed percent-encoding|must not contain @|absolute URL|encoded too many/);
          expect(sentinel.requests.length).toBe(before);
          refused++;
          return;
        }
        expect(res.status, `${p}: ${res.raw.slice(0, 200)}`).toBe(200);
        const seen = sentinel.requests.at(-1)!;
        expect(seen.url).toBe(`${ROOT}${p}`);
        expect(new URL(seen.url, 'http://x').pathname.startsWith(`${ROOT}/`)).toBe(true);
        forwarded++;
      }),
      { numRuns: 250 },
    );
    expect(refused).toBeGreaterThan(20);
    expect(forwarded).toBeGreaterThan(20);
  });
});

describe('support-desk domains that point elsewhere', () => {
  const HOSTILE_DOMAINS = [
    '127.0.0.1',
    '10.0.0.1',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '0.0.0.0',
    '2130706433',
    '0x7f000001',
    '127.1',
    '::1',
    '[::1]',
    '[::ffff:127.0.0.1]',
    'fe80::1',
    'localhost',
    'evil.example',
    'zendesk.com',
    'zendesk.com.evil.org',
    'acme.zendesk.com.evil.org',
    'acmezendesk.com',
    'acme.zendesk.com@evil.org',
    'evil.org#.zendesk.com',
    'evil.org/.zendesk.com',
    'evil.org?.zendesk.com',
    'acme.zendesk.com:8443',
    'https://acme.zendesk.com',
    'acme.zendesk.com.',
    '.zendesk.com',
    'аcme.zendesk.com',
    'acme.zendesk.com\u0000.evil.org',
    'acme.zendesk.com evil.org',
  ];

  it.each(HOSTILE_DOMAINS.map((d) => [d]))(
    'refuses the domain %j when the account is saved, keeping the old one',
    async (domain) => {
      await counted(domain, async () => {
        const lookups = asked.length;
        const e = await h.client
          .upsertConnectedAccount({
            connectionName: 'desk-real',
            identifier: 'u',
            credentials: { ...DESK_CREDS, domain },
          })
          .catch((x: unknown) => x);
        expect(e).toBeInstanceOf(ConnectorServiceError);
        expect((e as ConnectorServiceError).status).toBe(400);
        expect((e as ConnectorServiceError).details.map((d) => d.field)).toContain('credentials.domain');
        expect(
          (await h.client.getOrCreateConnectedAccount({ connectionName: 'desk-real', identifier: 'u' })).fields.domain,
        ).toBe(DOMAIN);
        expect(asked.length).toBe(lookups);
      })();
    },
  );

  it('refuses a stored domain that is not allowlisted (a row written around the API), sending nothing', async () => {
    await counted('stored domain', async () => {
      const s = h.running.services;
      await h.client.upsertConnectedAccount({
        connectionName: 'desk-real',
        identifier: 'tampered',
        credentials: DESK_CREDS,
      });
      const connection = (await s.store.getConnectionByName('desk-real'))!;
      for (const domain of ['127.0.0.1', '169.254.169.254', 'evil.example', '[::1]']) {
        const a = (await s.store.findAccount(connection.id, 'tampered'))!;
        await s.store.updateAccount(a.id, { fields: { ...a.fields, domain } }, Date.now(), a.version);
        const lookups = asked.length;
        const tool = await h.client
          .executeTool({
            toolName: 'helpdesk_groups_list' as never,
            toolInput: {} as never,
            connectionName: 'desk-real',
            identifier: 'tampered',
          })
          .catch((x: unknown) => x);
        expect((tool as ConnectorServiceError).code, domain).toBe('host_not_allowed');
        const proxied = await h.client
          .request({ connectionName: 'desk-real', identifier: 'tampered', path: '/v2/groups' })
          .catch((x: unknown) => x);
        expect((proxied as ConnectorServiceError).code, domain).toBe('host_not_allowed');
        expect(asked.length).toBe(lookups);
      }
    })();
  });

  it('refuses names under *.zendesk.com that resolve to private, loopback, link-local or mapped addresses', async () => {
    const names = Object.keys(DNS).filter((n) => n.endsWith('.zendesk.com'));
    const before = sentinel.requests.length;
    for (const name of names) {
      await counted(name, async () => {
        await h.client.upsertConnectedAccount({
          connectionName: 'desk-dns',
          identifier: name,
          credentials: { ...DESK_CREDS, domain: name },
        });
        await h.client.upsertConnectedAccount({
          connectionName: 'desk-real',
          identifier: name,
          credentials: { ...DESK_CREDS, domain: name },
        });
        for (const connectionName of ['desk-dns', 'desk-real']) {
          const lookups = asked.length;
          const tool = await h.client
            .executeTool({
              toolName: 'helpdesk_groups_list' as never,
              toolInput: {} as never,
              connectionName,
              identifier: name,
            })
            .catch((x: unknown) => x);
          expect(tool, `${connectionName} ${name}`).toBeInstanceOf(ConnectorServiceError);
          expect((tool as ConnectorServiceError).code, `${connectionName} ${name}: ${(tool as Error).message}`).toBe(
            'upstream_host_not_public',
          );
          const proxied = await h.client
            .request({ connectionName, identifier: name, path: '/v2/groups' })
            .catch((x: unknown) => x);
          expect((proxied as ConnectorServiceError).code, `${connectionName} ${name}`).toBe('upstream_host_not_public');
          // The refusal came from the lookup the socket would have used, not from a guess about the name.
          expect(asked.slice(lookups)).toContain(name);
        }
      })();
    }
    expect(sentinel.requests.length).toBe(before);
  });

  it('lets public addresses through the same lookup, and hosts the operator configured resolve anywhere', async () => {
    DNS['pub.zendesk.com'] = ['93.184.216.34', '2606:2800:220:1::1'];
    const addresses = await new Promise<LookupAddress[]>((resolve, reject) =>
      guardedLookup('pub.zendesk.com', { all: true }, (e, a) => (e ? reject(e) : resolve(a as LookupAddress[]))),
    );
    expect(addresses.map((a) => a.address)).toEqual(['93.184.216.34', '2606:2800:220:1::1']);
    for (const a of ['127.0.0.1', '10.9.9.9', '169.254.169.254', '::1', 'fd12::1', '::ffff:10.0.0.1', '0.0.0.0'])
      expect(isPublicAddress(a), a).toBe(false);
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:2800:220:1::1']) expect(isPublicAddress(a), a).toBe(true);
    // A connection whose operator names the upstream host (here one resolving to loopback) is not restricted.
    await h.client.createConnection({
      connection_name: 'desk-internal',
      connector: 'helpdesk',
      api_base_url: `http://localhost:${sentinel.port}/internal/{domain}`,
    });
    await h.client.upsertConnectedAccount({
      connectionName: 'desk-internal',
      identifier: 'u',
      credentials: DESK_CREDS,
    });
    const res = await h.client.request({ connectionName: 'desk-internal', identifier: 'u', path: '/v2/groups' });
    expect(res.status).toBe(200);
    expect(sentinel.requests.at(-1)!.url).toBe(`/internal/${DOMAIN}/v2/groups`);
  });
});

describe('a malicious upstream', () => {
  it('cannot redirect a tool call to IPv6 forms of loopback and private addresses (issue 12, point 7)', async () => {
    const forms = [
      `http://[::127.0.0.1]:${other.port}/`,
      `http://[::ffff:0:7f00:1]:${other.port}/`,
      `http://[::ffff:127.0.0.1]:${other.port}/`,
      `http://[64:ff9b::7f00:1]:${other.port}/`,
      `http://[2002:7f00:1::1]:${other.port}/`,
      `http://[::ffff:a9fe:a9fe]/latest/meta-data/`,
    ];
    let failed = 0;
    try {
      for (const location of forms) {
        sentinel.respond = (r) => (r.url.endsWith('/groups') ? { status: 302, headers: { location } } : undefined);
        const before = other.requests.length;
        const e = await h.client
          .executeTool({
            toolName: 'helpdesk_groups_list' as never,
            toolInput: {} as never,
            connectionName: 'desk',
            identifier: 'u',
          })
          .catch((x: unknown) => x);
        expect(e, location).toBeInstanceOf(ConnectorServiceError);
        expect((e as ConnectorServiceError).code, location).toBe('upstream_host_not_public');
        expect(other.requests.length).toBe(before);
      }
    } catch (e) {
      failed++;
      throw e;
    } finally {
      sentinel.respond = undefined;
      record({
        category: 'IPv6 forms',
        what: 'IPv6 forms of non-public addresses in redirects',
        tried: forms.length,
        failed,
      });
    }
  });

  it('cannot redirect a tool call to the metadata address, loopback names or another host', async () => {
    await counted('redirects', async () => {
      for (const location of [
        'http://169.254.169.254/latest/meta-data/',
        'http://[::1]/',
        `http://localhost:${other.port}/secret`,
        'http://10.0.0.1/',
        `http://0x7f000001:${other.port}/`,
      ]) {
        sentinel.respond = (r) => (r.url.endsWith('/groups') ? { status: 302, headers: { location } } : undefined);
        const before = other.requests.length;
        const e = await h.client
          .executeTool({
            toolName: 'helpdesk_groups_list' as never,
            toolInput: {} as never,
            connectionName: 'desk',
            identifier: 'u',
          })
          .catch((x: unknown) => x);
        expect(e, location).toBeInstanceOf(ConnectorServiceError);
        expect((e as ConnectorServiceError).code, location).toBe('upstream_host_not_public');
        expect(other.requests.length).toBe(before);
      }
      // A redirect within the configured upstream is still followed.
      sentinel.respond = (r) =>
        r.url.endsWith('/groups') ? { status: 302, headers: { location: `${ROOT}/v2/groups/moved` } } : undefined;
      const ok = await h.client.executeTool({
        toolName: 'helpdesk_groups_list' as never,
        // The provider's answer as it came (a concise answer keeps only the fields the tool's shape names).
        toolInput: { response_format: 'detailed' } as never,
        connectionName: 'desk',
        identifier: 'u',
      });
      expect(ok.data).toEqual({ sentinel: true });
      sentinel.respond = undefined;
    })();
  });

  it('cannot set cookies on the client through the proxy', async () => {
    sentinel.respond = () => ({ status: 200, headers: { 'set-cookie': 'session=stolen; Path=/' } });
    const res = await h.client.request({ connectionName: 'desk', identifier: 'u', path: '/v2/groups' });
    sentinel.respond = undefined;
    expect(res.headers.get('set-cookie')).toBeNull();
  });
});

describe('client headers against credentials and forwarding information', () => {
  const SPOOFED: Record<string, string> = {
    host: 'evil.example',
    cookie: 'session=client-cookie',
    'x-forwarded-for': '6.6.6.6',
    'x-forwarded-host': 'evil.example',
    'x-forwarded-proto': 'http',
    forwarded: 'for=6.6.6.6;host=evil.example',
    'x-real-ip': '6.6.6.6',
    'proxy-authorization': 'Basic Y2xpZW50OnZhbHVl',
  };

  it('drops every spoofed header and keeps the service token away from the provider', async () => {
    await counted('spoofed headers', async () => {
      for (const connection of ['desk', 'data']) {
        const lines = [
          ...proxyHeaders(connection),
          ...Object.entries(SPOOFED)
            .filter(([k]) => k !== 'host')
            .map(([k, v]) => `${k}: ${v}`),
          'X-Custom: kept',
        ];
        const res = await rawExchange(
          h.url,
          rawHttp(
            'GET /proxy/v2/groups HTTP/1.1',
            lines.map((l) => (l.startsWith('Host:') ? `Host: ${SPOOFED.host}` : l)),
          ),
        );
        expect(res.status, res.raw.slice(0, 200)).toBe(200);
        const seen = sentinel.requests.at(-1)!;
        const got = (name: string) => seen.headers.filter(([k]) => k === name).map(([, v]) => v);
        for (const name of Object.keys(SPOOFED)) if (name !== 'host') expect(got(name), name).toEqual([]);
        expect(got('host')).toEqual([`127.0.0.1:${sentinel.port}`]);
        expect(got('x-custom')).toEqual(['kept']);
        expect(JSON.stringify(seen.headers)).not.toContain(token);
        if (connection === 'desk')
          expect(got('authorization')).toEqual([
            `Basic ${Buffer.from(`${DESK_CREDS.email}/token:${DESK_CREDS.api_token}`).toString('base64')}`,
          ]);
        else expect(got('x-api-key')).toEqual([DATA_KEY]);
      }
    })();
  });

  it('passes an upload sent with Expect: 100-continue: the service answers the expectation, the provider gets the body', async () => {
    // curl sends the header with any upload over 1 KB. It is this hop's: the service sends the 100 Continue itself,
    // and the provider gets the body with the request, without the header.
    const body = JSON.stringify({ group: { name: 'x'.repeat(2000) } });
    const res = await rawExchange(
      h.url,
      rawHttp(
        'POST /proxy/v2/groups HTTP/1.1',
        [
          ...proxyHeaders('desk'),
          'Content-Type: application/json',
          `Content-Length: ${Buffer.byteLength(body)}`,
          'Expect: 100-continue',
        ],
        body,
      ),
    );
    expect(res.raw.slice(0, 200)).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
    const seen = sentinel.requests.at(-1)!;
    expect(seen.method).toBe('POST');
    expect(seen.body.toString()).toBe(body);
    expect(seen.headers.filter(([k]) => k === 'expect')).toEqual([]);
    expect(seen.headers.filter(([k]) => k === 'content-length')).toEqual([['content-length', String(body.length)]]);
  });

  // Many servers read `_` as `-` (and ignore case): x_forwarded_for is X-Forwarded-For to them.
  const UNDERSCORED: Record<string, string> = {
    x_forwarded_for: '6.6.6.6',
    X_Forwarded_Host: 'evil.example',
    x_forwarded_proto: 'http',
    x_real_ip: '6.6.6.6',
    proxy_authorization: 'Basic Y2xpZW50OnZhbHVl',
    Proxy_Connection: 'keep-alive',
    x_request_id: 'spoofed',
  };
  const spellingTally: Tally = { tried: 0, failed: 0 };
  afterAll(() =>
    record({
      category: 'header spellings',
      what: 'underscore and case spellings of blocked and credential headers',
      tried: spellingTally.tried,
      failed: spellingTally.failed,
    }),
  );

  it('drops forwarding and session headers spelled with underscores or in any case', async () => {
    await tallied(spellingTally, Object.keys(UNDERSCORED).length * 2, async () => {
      for (const connection of ['desk', 'data']) {
        const lines = [
          ...proxyHeaders(connection),
          ...Object.entries(UNDERSCORED).map(([k, v]) => `${k}: ${v}`),
          'X_Custom: kept',
        ];
        const res = await rawExchange(h.url, rawHttp('GET /proxy/v2/groups HTTP/1.1', lines));
        expect(res.status, res.raw.slice(0, 200)).toBe(200);
        const seen = sentinel.requests.at(-1)!;
        const names = seen.headers.map(([k]) => k.toLowerCase().replace(/_/g, '-'));
        for (const name of Object.keys(UNDERSCORED))
          expect(names, name).not.toContain(name.toLowerCase().replace(/_/g, '-'));
        expect(JSON.stringify(seen.headers)).not.toContain('6.6.6.6');
        expect(JSON.stringify(seen.headers)).not.toContain('Y2xpZW50OnZhbHVl');
        // A header that is neither passes as the client spelled it.
        expect(seen.headers.filter(([k]) => k === 'x_custom')).toEqual([['x_custom', 'kept']]);
      }
    });
  });

  it("refuses the connector's credential header spelled with underscores, sending nothing", async () => {
    const lines = [
      'x_api_key: client-key',
      'X_API_KEY: client-key',
      'X_Api-Key: client-key',
      'x_upstream_authorization: Bearer x',
    ];
    await tallied(spellingTally, lines.length, async () => {
      const before = sentinel.requests.length;
      for (const line of lines) {
        const res = await rawExchange(h.url, rawHttp('GET /proxy/v2/groups HTTP/1.1', [...proxyHeaders('data'), line]));
        expect(res.status, `${line}: ${res.raw.slice(0, 200)}`).toBe(400);
        expect(res.body).toContain('credential_header_not_allowed');
      }
      expect(sentinel.requests.length).toBe(before);
    });
  });

  it("refuses a client value for the connector's credential header, in any spelling, sending nothing", async () => {
    await counted('credential headers', async () => {
      const before = sentinel.requests.length;
      for (const line of [
        'X-API-Key: client-key',
        'x-api-key: client-key',
        'X-Api-Key: client-key',
        'X-Upstream-Authorization: Bearer x',
      ]) {
        const res = await rawExchange(h.url, rawHttp('GET /proxy/v2/groups HTTP/1.1', [...proxyHeaders('data'), line]));
        expect(res.status, `${line}: ${res.raw.slice(0, 200)}`).toBe(400);
        expect(res.body).toContain('credential_header_not_allowed');
      }
      // Naming the credential header as hop-by-hop does not remove the service's value either.
      const res = await rawExchange(
        h.url,
        rawHttp('GET /proxy/v2/groups HTTP/1.1', [...proxyHeaders('data'), 'Connection: x-api-key, authorization']),
      );
      expect(res.status).toBe(200);
      expect(sentinel.requests.length).toBe(before + 1);
      expect(sentinel.requests.at(-1)!.headers.filter(([k]) => k === 'x-api-key')).toEqual([['x-api-key', DATA_KEY]]);
    })();
  });
});
