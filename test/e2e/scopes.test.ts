/**
 * Scoped API credentials (issue 37, item 1), generated from the route table: every bearer route of
 * core/api/endpoints.ts is called with a token whose credential holds only the route's scope (allowed: anything but
 * 401 and 403) and with one holding every other scope (403 `insufficient_scope` naming it); the same for every gRPC
 * method of the Scalekit surface (runtime/scalekit/grpc.ts, GRPC_SCOPES), over HTTP/2 with the Connect protocol. A
 * route added without a scope does not type-check (the field is required); one added with a scope is covered here
 * at once.
 */
import http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpoints, type Endpoint } from '../../core/api/endpoints.ts';
import { SCOPES, type Scope } from '../../core/api/scopes.ts';
import { GRPC_SCOPES } from '../../runtime/scalekit/grpc.ts';
import { ConnectedAccountService, ConnectionService, ToolService } from '../../runtime/scalekit/descriptors.ts';
import { serviceToken, startHarness, type Harness } from '../helpers/harness.ts';

let h: Harness;
let admin: string;
/** A token per scope: `only[s]` holds `s` alone, `without[s]` every scope but `s`. */
const only = {} as Record<Scope, string>;
const without = {} as Record<Scope, string>;

async function api(token: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${h.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json: { error?: { code?: string; message?: string; details?: Record<string, unknown> } } = {};
  try {
    json = JSON.parse(text) as typeof json;
  } catch {
    /* not JSON: a page, a stream */
  }
  return { status: res.status, json, headers: res.headers };
}

async function credentialToken(scopes: readonly string[], connectionNames?: string[]): Promise<string> {
  const created = await api(admin, 'POST', '/v1/api-credentials', {
    name: `scopes ${scopes.join(' ')}`,
    scopes,
    ...(connectionNames ? { connection_names: connectionNames } : {}),
  });
  expect(created.status).toBe(201);
  const c = created.json as unknown as { client_id: string; client_secret: string };
  const res = await fetch(`${h.url}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: c.client_id,
      client_secret: c.client_secret,
    }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

beforeAll(async () => {
  h = await startHarness();
  admin = await serviceToken(h.url);
  for (const s of SCOPES) {
    only[s] = await credentialToken([s]);
    without[s] = await credentialToken(SCOPES.filter((x) => x !== s));
  }
});
afterAll(async () => h?.close());

/** A request for the route: its path with each parameter filled in, and the proxy's headers. */
function requestFor(e: Endpoint): { method: string; path: string; headers: Record<string, string> } {
  const path = e.path.replace(/\{(\w+)\}/g, (_m, name: string) => (name === 'path' ? 'v1/anything' : 'nothing-here'));
  const headers: Record<string, string> = e.rest ? { connection_name: 'nothing-here', identifier: 'u1' } : {};
  return { method: e.method === 'ANY' ? 'GET' : e.method, path, headers };
}

const bearerRoutes = Object.entries(endpoints as Record<string, Endpoint>).filter(([, e]) => e.auth === 'bearer');

describe('every bearer route of the route table', () => {
  it('declares a scope that exists, and every scope is some route’s', () => {
    const used = new Set<string>();
    for (const [, e] of bearerRoutes) {
      expect(SCOPES).toContain(e.scope);
      used.add(e.scope!);
    }
    // Every scope guards at least one route (`audit:read` included once the audit log's route exists).
    expect(SCOPES.filter((s) => !used.has(s))).toEqual([]);
  });

  it.each(bearerRoutes)('%s: allowed with its scope alone, 403 insufficient_scope without it', async (_id, e) => {
    const scope = e.scope as Scope;
    const r = requestFor(e);
    const refused = await api(without[scope], r.method, r.path, undefined, r.headers);
    expect(refused.status, `${r.method} ${r.path} without ${scope}`).toBe(403);
    expect(refused.json.error?.code).toBe('insufficient_scope');
    expect(refused.json.error?.message).toContain(`"${scope}"`);
    expect(refused.json.error?.details).toEqual({ required_scope: scope });
    expect(refused.headers.get('www-authenticate')).toBe(`Bearer error="insufficient_scope", scope="${scope}"`);

    const allowed = await api(only[scope], r.method, r.path, undefined, r.headers);
    expect([401, 403], `${r.method} ${r.path} with ${scope} answered ${allowed.status}`).not.toContain(allowed.status);
  });

  it('shows each route’s scope in the OpenAPI document', async () => {
    const doc = (await (await fetch(`${h.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { operationId: string; security?: unknown; 'x-required-scope'?: string }>>;
    };
    const byId = new Map<string, { security?: unknown; 'x-required-scope'?: string }>();
    for (const ops of Object.values(doc.paths)) for (const op of Object.values(ops)) byId.set(op.operationId, op);
    for (const [route, e] of bearerRoutes) {
      // The proxy (every method) is one operation per method: proxyGet, proxyPost…
      const id = e.method === 'ANY' ? `${route}Get` : route;
      expect(byId.get(id)?.['x-required-scope'], id).toBe(e.scope);
      expect(byId.get(id)?.security, id).toEqual([{ bearerAuth: [e.scope] }]);
    }
  });
});

describe('credentials grant only what they hold', () => {
  it('refuses a scope the creating credential lacks, and * from one without every scope', async () => {
    const creator = await credentialToken(['credentials:admin', 'tools:execute']);
    const ok = await api(creator, 'POST', '/v1/api-credentials', { name: 'agent', scopes: ['tools:execute'] });
    expect(ok.status).toBe(201);
    expect((ok.json as unknown as { scopes: string[] }).scopes).toEqual(['tools:execute']);
    const more = await api(creator, 'POST', '/v1/api-credentials', { name: 'more', scopes: ['connections:write'] });
    expect(more.status).toBe(403);
    expect(more.json.error).toMatchObject({
      code: 'insufficient_scope',
      details: { required_scope: 'connections:write' },
    });
    const all = await api(creator, 'POST', '/v1/api-credentials', { name: 'all', scopes: ['*'] });
    expect(all.status).toBe(403);
    // Without scopes: the creator's own.
    const same = await api(creator, 'POST', '/v1/api-credentials', { name: 'same' });
    expect((same.json as unknown as { scopes: string[] }).scopes.sort()).toEqual([
      'credentials:admin',
      'tools:execute',
    ]);
    const bad = await api(admin, 'POST', '/v1/api-credentials', { name: 'bad', scopes: ['tools:everything'] });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.json)).toContain('scopes');
  });

  it('lists each credential with its scopes; the first holds every scope', async () => {
    const list = await api(admin, 'GET', '/v1/api-credentials');
    const creds = (list.json as unknown as { api_credentials: Array<{ name: string; scopes: string[] }> })
      .api_credentials;
    expect(creds[0]).toMatchObject({ name: 'First credential', scopes: ['*'] });
    expect(creds.find((c) => c.name === 'scopes proxy')?.scopes).toEqual(['proxy']);
  });

  it('keeps a credential restricted to named connections within them, and lets it grant no other', async () => {
    await api(admin, 'POST', '/v1/connections', { connection_name: 'docs-a', connector: 'docs' });
    await api(admin, 'POST', '/v1/connections', { connection_name: 'docs-b', connector: 'docs' });
    const token = await credentialToken(
      ['connections:read', 'accounts:write', 'accounts:read', 'credentials:admin'],
      ['docs-a'],
    );
    expect((await api(token, 'GET', '/v1/connections/docs-a')).status).toBe(200);
    const other = await api(token, 'GET', '/v1/connections/docs-b');
    expect(other.status).toBe(403);
    expect(other.json.error?.code).toBe('connection_not_allowed');
    const names = (
      (await api(token, 'GET', '/v1/connections')).json as unknown as {
        connections: Array<{ connection_name: string }>;
      }
    ).connections.map((c) => c.connection_name);
    expect(names).toEqual(['docs-a']);
    const account = await api(token, 'POST', '/v1/connected-accounts', { connection_name: 'docs-b', identifier: 'u' });
    expect(account.status).toBe(403);
    const b = await api(admin, 'POST', '/v1/connected-accounts', { connection_name: 'docs-b', identifier: 'u' });
    const id = (b.json as unknown as { connected_account: { id: string } }).connected_account.id;
    expect((await api(token, 'GET', `/v1/connected-accounts/${id}`)).status).toBe(403);
    expect((await api(token, 'DELETE', `/v1/connected-accounts/${id}`)).status).toBe(403);
    const exec = await credentialToken(['tools:execute'], ['docs-a']);
    const run = await api(exec, 'POST', '/v1/tools/execute', {
      tool_name: 'docs_list_documents',
      connection_name: 'docs-b',
      identifier: 'u',
    });
    expect(run.status).toBe(403);
    expect(run.json.error?.code).toBe('connection_not_allowed');
    const wider = await api(token, 'POST', '/v1/api-credentials', { name: 'w', connection_names: ['docs-b'] });
    expect(wider.status).toBe(403);
    const inherited = await api(token, 'POST', '/v1/api-credentials', { name: 'i', scopes: ['accounts:read'] });
    expect((inherited.json as unknown as { connection_names: string[] }).connection_names).toEqual(['docs-a']);
  });
});

describe('every gRPC method of the Scalekit surface', () => {
  const services = { accounts: ConnectedAccountService, tools: ToolService, connections: ConnectionService };
  const methods = Object.entries(GRPC_SCOPES).flatMap(([key, table]) =>
    Object.entries(table as Record<string, Scope>).map(([local, scope]) => {
      const service = services[key as keyof typeof services];
      const method = service.methods.find((m) => m.localName === local)!;
      return [`${service.typeName}/${method.name}`, scope] as const;
    }),
  );

  async function call(
    token: string,
    path: string,
  ): Promise<{ status: number; body: { code?: string; message?: string } }> {
    const session = http2.connect(h.url);
    session.on('error', () => {});
    try {
      return await new Promise((resolve, reject) => {
        const req = session.request({
          ':method': 'POST',
          ':path': `/${path}`,
          'content-type': 'application/json',
          'connect-protocol-version': '1',
          authorization: `Bearer ${token}`,
        });
        let status = 0;
        const chunks: Buffer[] = [];
        req.on('response', (hd) => (status = Number(hd[':status'])));
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status, body: text ? (JSON.parse(text) as { code?: string }) : {} });
        });
        req.on('error', reject);
        req.end('{}');
      });
    } finally {
      session.close();
    }
  }

  it('covers every method the service implements', () => {
    expect(methods.length).toBe(12);
  });

  it.each(methods)('%s: allowed with its scope alone, permission_denied naming it without', async (path, scope) => {
    const refused = await call(without[scope], path);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('permission_denied');
    expect(refused.body.message).toContain(`"${scope}"`);
    const allowed = await call(only[scope], path);
    expect([401, 403], `${path} with ${scope}: ${JSON.stringify(allowed.body)}`).not.toContain(allowed.status);
  });
});
