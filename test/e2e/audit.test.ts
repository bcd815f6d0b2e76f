/**
 * The audit log (issue 37, item 3): every audited action is performed for real — through the API with a scoped
 * credential, through the Scalekit REST surface, through the dashboard as a signed-in user, a dashboard sign-in that
 * fails and one that succeeds, and an authorization link an end user completes — and each is found in
 * GET /v1/audit-events with its actor, source address and request id, never a secret's value. Then one stored entry
 * is altered (by hand, in the database: the append-only trigger dropped first, as an intruder would) and
 * `npm run keys -- verify-audit` fails; removing one fails it too; retention prunes while the chain still verifies.
 */
import { execFile } from 'node:child_process';
import http2 from 'node:http2';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentConnectorClient } from '../../packages/client/src/index.ts';
import { pruneAudit } from '../../runtime/services.ts';
import { verifyAudit } from '../../runtime/audit/log.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';
import { FakeGong } from '../fakes/gong.ts';
import { followAuthorizationLink, oauthConnection, startHarness, type Harness } from '../helpers/harness.ts';

const ADMIN_PASSWORD = 'audit-admin-password-8c2e';
let h: Harness;
let admin: AgentConnectorClient;
let adminCredentialId: string;
let token: string;
let gong: FakeGong;

interface Entry {
  seq: number;
  actor_type: string;
  actor_id: string;
  action: string;
  target_id: string;
  source_address: string | null;
  request_id: string | null;
  changes: Record<string, unknown>;
}

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${h.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      'x-request-id': `req-${method}-${path.length}`,
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as unknown) : undefined };
}

async function entries(query = ''): Promise<Entry[]> {
  const r = await api('GET', `/v1/audit-events?limit=1000${query}`);
  expect(r.status).toBe(200);
  return (r.json as { audit_events: Entry[] }).audit_events;
}

/** One call of the Scalekit gRPC surface with the Connect protocol (JSON) over HTTP/2, as the SDK makes it. */
async function grpcCall(path: string, body: unknown): Promise<{ status: number; text: string }> {
  const session = http2.connect(h.url);
  session.on('error', () => {});
  try {
    return await new Promise((resolve, reject) => {
      const req = session.request({
        ':method': 'POST',
        ':path': `/${path}`,
        'content-type': 'application/json',
        'connect-protocol-version': '1',
        'x-request-id': 'req-grpc-1',
        authorization: `Bearer ${token}`,
      });
      let status = 0;
      const chunks: Buffer[] = [];
      req.on('response', (hd) => (status = Number(hd[':status'])));
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve({ status, text: Buffer.concat(chunks).toString('utf8') }));
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
  } finally {
    session.close();
  }
}

/** `npm run keys -- <args>` as its own process, on the harness's data directory. */
function keys(...args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      'npm',
      ['run', '--silent', 'keys', '--', ...args],
      { cwd: process.cwd(), env: { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: h.dataDir } },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

beforeAll(async () => {
  gong = await new FakeGong({ accessKey: 'calls-key-1', accessKeySecret: 'calls-secret-1-9f3a' }).start();
  h = await startHarness({ env: { ADMIN_PASSWORD, WEBHOOK_ALLOWED_HOSTS: 'localhost' } });
  // A credential made for this test, so that its id is the actor to look for.
  const c = await h.client.createApiCredential({ name: 'operator' });
  adminCredentialId = c.id;
  admin = new AgentConnectorClient({ clientId: c.client_id, clientSecret: c.client_secret, envUrl: h.url });
  const res = await fetch(`${h.url}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: c.client_id,
      client_secret: c.client_secret,
    }),
  });
  token = ((await res.json()) as { access_token: string }).access_token;
});
afterAll(async () => {
  await h?.close();
  await gong?.close();
});

describe('every audited action is found with its actor', () => {
  it('API, Scalekit REST, dashboard, sign-ins and a completed authorization link', async () => {
    // Connections.
    expect((await api('POST', '/v1/connections', { connection_name: 'desk', connector: 'helpdesk' })).status).toBe(201);
    expect((await api('PATCH', '/v1/connections/desk', { api_base_url: 'http://localhost:9/api' })).status).toBe(200);
    // Accounts.
    expect(
      (
        await api('PUT', '/v1/connected-accounts', {
          connection_name: 'desk',
          identifier: 'ann',
          credentials: { domain: 'acme.zendesk.com', email: 'ann@acme.example', api_token: 'desk-token-secret-1' },
        })
      ).status,
    ).toBe(200);
    const created = await api('POST', '/v1/connected-accounts', { connection_name: 'desk', identifier: 'bob' });
    const bob = (created.json as { connected_account: { id: string } }).connected_account.id;
    const ann = (
      (await api('GET', '/v1/connected-accounts?identifier=ann')).json as { connected_accounts: Array<{ id: string }> }
    ).connected_accounts[0]!.id;
    expect((await api('POST', `/v1/connected-accounts/${ann}/disconnect`)).status).toBe(200);
    expect((await api('DELETE', `/v1/connected-accounts/${bob}`)).status).toBe(200);
    // Scalekit REST: an account created there.
    expect((await api('POST', '/api/v1/connected_accounts', { connector: 'desk', identifier: 'carol' })).status).toBe(
      200,
    );
    // Credentials.
    const cred = await api('POST', '/v1/api-credentials', { name: 'agent', scopes: ['tools:execute'] });
    const credId = (cred.json as { id: string; client_secret: string }).id;
    const credSecret = (cred.json as { client_secret: string }).client_secret;
    expect((await api('DELETE', `/v1/api-credentials/${credId}`)).status).toBe(200);
    // Webhooks.
    const hook = await api('POST', '/v1/webhooks', {
      url: 'http://localhost:9/hook',
      events: ['connected_account.active'],
    });
    expect(hook.status).toBe(201);
    const hookId = (hook.json as { id: string; secret: string }).id;
    const hookSecret = (hook.json as { secret: string }).secret;
    expect((await api('PATCH', `/v1/webhooks/${hookId}`, { url: 'http://localhost:9/hook2' })).status).toBe(200);
    expect((await api('POST', `/v1/webhooks/${hookId}/rotate-secret`)).status).toBe(200);
    expect((await api('DELETE', `/v1/webhooks/${hookId}`)).status).toBe(200);
    // MCP servers and their URLs.
    const mcp = await api('POST', '/v1/mcp-servers', { name: 'support', connections: ['desk'] });
    expect(mcp.status).toBe(201);
    const mcpId = (mcp.json as { id: string }).id;
    expect((await api('PATCH', `/v1/mcp-servers/${mcpId}`, { name: 'support-2' })).status).toBe(200);
    const url = await api('POST', `/v1/mcp-servers/${mcpId}/urls`, { identifier: 'ann' });
    const urlId = (url.json as { id: string; url: string }).id;
    const mcpUrl = (url.json as { url: string }).url;
    expect((await api('DELETE', `/v1/mcp-servers/${mcpId}/urls/${urlId}`)).status).toBe(200);
    expect((await api('DELETE', `/v1/mcp-servers/${mcpId}`)).status).toBe(200);
    // Trigger instances: created, paused, resumed and deleted through the API.
    expect(
      (
        await api('POST', '/v1/connections', {
          connection_name: 'calls',
          connector: 'callintel',
          auth_kind: 'api_key',
          api_base_url: gong.url,
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await api('PUT', '/v1/connected-accounts', {
          connection_name: 'calls',
          identifier: 'ann',
          credentials: { access_key: 'calls-key-1', access_key_secret: 'calls-secret-1-9f3a' },
        })
      ).status,
    ).toBe(200);
    const trigger = await api('POST', '/v1/triggers', {
      trigger: 'callintel_call_created',
      connection_name: 'calls',
      identifier: 'ann',
    });
    expect(trigger.status).toBe(201);
    const triggerId = (trigger.json as { id: string }).id;
    expect((await api('POST', `/v1/triggers/${triggerId}/pause`)).status).toBe(200);
    expect((await api('POST', `/v1/triggers/${triggerId}/resume`)).status).toBe(200);
    expect((await api('DELETE', `/v1/triggers/${triggerId}`)).status).toBe(200);
    // The Scalekit gRPC surface (the Connect protocol over HTTP/2): an account created there.
    const grpc = await grpcCall('scalekit.v1.connected_accounts.ConnectedAccountService/CreateConnectedAccount', {
      connector: 'desk',
      identifier: 'erin',
    });
    expect(grpc.status, grpc.text).toBe(200);
    // A completed authorization link (the end user is the actor).
    await oauthConnection(h, 'mail', 'mail', 'http://localhost:9/v1.0');
    const { link } = await admin.getAuthorizationLink({ connectionName: 'mail', identifier: 'dana' });
    expect((await followAuthorizationLink(link, 'dana')).status).toBe(200);
    // The dashboard: a failed sign-in, a successful one, and a change made there.
    const wrong = new DashboardClient(h.url);
    expect((await wrong.signIn('not-the-password')).status).toBe(401);
    const dash = new DashboardClient(h.url);
    expect((await dash.signIn(ADMIN_PASSWORD)).status).toBe(303);
    const made = await dash.submit('/dashboard/api-credentials', '/dashboard/api-credentials', {
      name: 'from-dashboard',
    });
    expect(made.status).toBe(200);
    // Deleting the connection last.
    expect([200, 202]).toContain((await api('DELETE', '/v1/connections/desk')).status);

    const all = await entries();
    const find = (action: string, actorId?: string) => {
      const e = all.find((x) => x.action === action && (actorId === undefined || x.actor_id === actorId));
      expect(e, `an entry ${action}${actorId ? ` by ${actorId}` : ''}`).toBeDefined();
      return e!;
    };
    for (const action of [
      'connection.create',
      'connection.update',
      'connection.delete',
      'account.upsert',
      'account.create',
      'account.disconnect',
      'account.delete',
      'credential.create',
      'credential.revoke',
      'webhook.create',
      'webhook.update',
      'webhook.rotate_secret',
      'webhook.delete',
      'mcp_server.create',
      'mcp_server.update',
      'mcp_url.create',
      'mcp_url.revoke',
      'mcp_server.delete',
      'trigger.create',
      'trigger.pause',
      'trigger.resume',
      'trigger.delete',
    ]) {
      const e = find(action, adminCredentialId);
      expect(e.actor_type).toBe('credential');
      expect(e.source_address).toMatch(/127\.0\.0\.1/);
      expect(e.request_id).toMatch(/^req-/);
    }
    expect(find('connection.update').changes).toEqual({
      api_base_url: { from: null, to: 'http://localhost:9/api' },
    });
    expect(
      all.find((e) => e.action === 'account.upsert' && e.changes.connection_name === 'desk')?.changes,
    ).toMatchObject({
      credentials: { domain: 'set', email: 'set', api_token: 'set' },
    });
    expect(all.filter((e) => e.action === 'account.create').map((e) => e.changes.identifier)).toContain('carol');
    for (const action of ['trigger.create', 'trigger.pause', 'trigger.resume', 'trigger.delete'])
      expect(find(action).target_id).toBe(triggerId);
    expect(find('trigger.create').changes).toMatchObject({
      trigger: 'callintel_call_created',
      connection_name: 'calls',
      identifier: 'ann',
    });
    // The gRPC call's entry names where it came from and the request id the client sent.
    const viaGrpc = all.find((e) => e.action === 'account.create' && e.changes.identifier === 'erin');
    expect(viaGrpc).toMatchObject({ actor_type: 'credential', actor_id: adminCredentialId, request_id: 'req-grpc-1' });
    expect(viaGrpc!.source_address).toMatch(/127\.0\.0\.1/);
    expect(find('authorization.complete')).toMatchObject({ actor_type: 'end_user', actor_id: 'dana' });
    expect(find('dashboard.sign_in_failed')).toMatchObject({ actor_type: 'dashboard_user', actor_id: 'admin' });
    expect(find('dashboard.sign_in')).toMatchObject({ actor_type: 'dashboard_user', actor_id: 'admin' });
    // The dashboard's change is recorded once its page went out: read until it is there (a count, not a time).
    let fromDashboard: Entry | undefined;
    for (let i = 0; i < 50 && !fromDashboard; i++)
      fromDashboard = (await entries('&action=credential.create')).find((e) => e.actor_type === 'dashboard_user');
    expect(fromDashboard).toMatchObject({ actor_id: 'admin', target_id: 'from-dashboard' });

    // Never a secret's value.
    const text = JSON.stringify(all);
    for (const secret of [
      'desk-token-secret-1',
      'calls-secret-1-9f3a',
      credSecret,
      hookSecret,
      mcpUrl,
      ADMIN_PASSWORD,
      'not-the-password',
    ])
      expect(text).not.toContain(secret);

    // Filters and the cursor.
    const byActor = await entries(`&actor=${adminCredentialId}&action=webhook.create`);
    expect(byActor.map((e) => e.action)).toEqual(['webhook.create']);
    const page1 = await api('GET', '/v1/audit-events?limit=3');
    const p1 = page1.json as { audit_events: Entry[]; next_cursor: string };
    const page2 = (await api('GET', `/v1/audit-events?limit=3&cursor=${p1.next_cursor}`)).json as {
      audit_events: Entry[];
    };
    expect(page2.audit_events[0]!.seq).toBe(p1.audit_events[2]!.seq - 1);
    expect((await api('GET', '/v1/audit-events?from=yesterday')).status).toBe(400);
    const none = await entries(`&to=${encodeURIComponent(new Date(0).toISOString())}`);
    expect(none).toEqual([]);

    // The JSON-lines export: every entry, oldest first, one per line.
    const exported = await fetch(`${h.url}/v1/audit-events/export`, { headers: { authorization: `Bearer ${token}` } });
    expect(exported.headers.get('content-type')).toMatch(/application\/x-ndjson/);
    const lines = (await exported.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Entry);
    expect(lines.length).toBeGreaterThanOrEqual(all.length);
    expect(lines.map((e) => e.seq)).toEqual([...lines.map((e) => e.seq)].sort((a, b) => a - b));
  });
});

describe('the hash chain', () => {
  it('verifies, and fails once a stored entry is altered or removed', async () => {
    const ok = await keys('verify-audit');
    expect(ok.out).toContain('the audit log verifies');
    expect(ok.code).toBe(0);

    const db = new Database(join(h.dataDir, 'acs.sqlite'));
    try {
      expect(() => db.prepare('UPDATE audit_events SET actor_id = ? WHERE seq = 3').run('someone-else')).toThrow(
        /append-only/,
      );
      db.exec('DROP TRIGGER audit_events_append_only');
      const original = db.prepare('SELECT actor_id FROM audit_events WHERE seq = 3').get() as { actor_id: string };
      db.prepare('UPDATE audit_events SET actor_id = ? WHERE seq = 3').run('someone-else');
      const altered = await keys('verify-audit');
      expect(altered.code).not.toBe(0);
      expect(altered.out).toMatch(/entry 3 .*altered/);
      db.prepare('UPDATE audit_events SET actor_id = ? WHERE seq = 3').run(original.actor_id);
      expect((await keys('verify-audit')).code).toBe(0);

      db.prepare('DELETE FROM audit_events WHERE seq = 5').run();
      const removed = await keys('verify-audit');
      expect(removed.code).not.toBe(0);
      expect(removed.out).toMatch(/entry 5 missing/);
    } finally {
      db.close();
    }
  });

  it('keeps verifying after retention prunes the oldest entries (the anchor moves)', async () => {
    const store = h.running.services.store;
    // A fresh chain: the one above was broken on purpose.
    const before = await store.auditHead();
    const n = await pruneAudit(store, 1, 2, Date.now() + 2 * 86_400_000);
    expect(n).toBeGreaterThan(0);
    const head = await store.auditHead();
    expect(head.anchorSeq).toBe(before.seq);
    await h.running.services.audit.record(
      { actorType: 'system', actorId: 'test' },
      {
        action: 'test.after_prune',
        targetType: 'none',
        targetId: 'none',
      },
    );
    const report = await verifyAudit(store);
    expect(report).toMatchObject({ ok: true, checked: 1 });
  });
});
