/**
 * Dashboard users and roles (issue 37, item 4) at the HTTP level: an admin invites users by one-time links (used
 * once, refused once expired), viewers change nothing (no form that changes anything is rendered, every POST is
 * refused 403), operators are refused users and API credentials, a demoted or removed user loses their rights at the
 * next request, and the last admin can be neither demoted nor removed.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';

const ADMIN_PASSWORD = 'users-admin-password-3e7a';
let h: Harness;
let admin: DashboardClient;

beforeAll(async () => {
  h = await startHarness({ env: { ADMIN_PASSWORD } });
  admin = new DashboardClient(h.url);
  expect((await admin.signIn(ADMIN_PASSWORD)).status).toBe(303);
});
afterAll(async () => h?.close());

/** The POST forms of a page, but signing out. */
const changingForms = (html: string) =>
  [...html.matchAll(/<form\b[^>]*method="post"[^>]*>/g)].map((m) => m[0]).filter((f) => !f.includes('/sign-out'));

async function invite(username: string, role: string): Promise<string> {
  const made = await admin.submit('/dashboard/users', '/dashboard/users/invitations', { username, role });
  expect(made.status).toBe(200);
  const link = /value="(http[^"]+\/dashboard\/invitations\/[^"]+)"/.exec(made.html)?.[1];
  expect(link, made.html).toBeDefined();
  return link!;
}

/** Opens the invitation in a fresh browser and sets a password; the client is signed in after a 303. */
async function accept(
  link: string,
  password = 'a-good-long-password-1',
): Promise<{ c: DashboardClient; status: number }> {
  const c = new DashboardClient(h.url);
  const path = new URL(link).pathname;
  const page = await c.get(path);
  if (page.status !== 200) return { c, status: page.status };
  const res = await c.post(path, { _csrf: DashboardClient.csrf(page.html), password, password_again: password });
  return { c, status: res.status };
}

describe('invitations', () => {
  it('signs the invitee in once, and the link does not work again', async () => {
    const link = await invite('vera@example.com', 'viewer');
    const c = new DashboardClient(h.url);
    const path = new URL(link).pathname;
    const page = await c.get(path);
    expect(page.status).toBe(200);
    expect(page.html).toContain('vera@example.com');
    // The same password rules as ever: too short is refused, nothing is used up.
    const short = await c.post(path, {
      _csrf: DashboardClient.csrf(page.html),
      password: 'short',
      password_again: 'short',
    });
    expect(short.status).toBe(400);
    expect(short.html).toContain('at least 12 characters');
    const ok = await accept(link);
    expect(ok.status).toBe(303);
    expect((await ok.c.get('/dashboard/connections')).status).toBe(200);
    // Single use.
    expect((await accept(link)).status).toBe(410);
    expect((await c.get(path)).status).toBe(410);
    // The invitee signs in with the password from now on.
    const again = new DashboardClient(h.url);
    expect((await again.signIn('a-good-long-password-1', 'vera@example.com')).status).toBe(303);
  });

  it('refuses an expired invitation and a made-up token', async () => {
    const token = 'expired-invitation-token-0123456789';
    const now = Date.now();
    await h.running.services.store.createDashboardInvitation({
      id: 'inv_expired',
      tokenHash: createHash('sha256').update(token).digest('hex'),
      username: 'late',
      role: 'admin',
      createdBy: 'admin',
      createdAt: now - 10_000,
      expiresAt: now - 1,
      usedAt: null,
    });
    const c = new DashboardClient(h.url);
    const expired = await c.get(`/dashboard/invitations/${token}`);
    expect(expired.status).toBe(410);
    expect(expired.html).toContain('has expired');
    const csrf = DashboardClient.csrf((await c.get('/dashboard/sign-in')).html);
    const posted = await c.post(`/dashboard/invitations/${token}`, {
      _csrf: csrf,
      password: 'a-good-long-password-1',
      password_again: 'a-good-long-password-1',
    });
    expect(posted.status).toBe(410);
    expect(await h.running.services.store.getDashboardUserByName('late')).toBeUndefined();
    expect((await c.get('/dashboard/invitations/made-up-token-made-up-token-00')).status).toBe(410);
  });
});

describe('roles', () => {
  let viewer: DashboardClient;
  let operator: DashboardClient;

  beforeAll(async () => {
    viewer = (await accept(await invite('val', 'viewer'))).c;
    operator = (await accept(await invite('otto', 'operator'))).c;
  });

  it('shows a viewer every page without a form that changes anything, and refuses each POST', async () => {
    for (const path of [
      '/dashboard/connections',
      '/dashboard/api-credentials',
      '/dashboard/webhooks',
      '/dashboard/mcp-servers',
    ]) {
      const page = await viewer.get(path);
      expect(page.status, path).toBe(200);
      expect(changingForms(page.html), path).toEqual([]);
    }
    // The admin sees the forms on the same pages.
    expect(changingForms((await admin.get('/dashboard/api-credentials')).html).length).toBeGreaterThan(0);
    const csrf = DashboardClient.csrf((await viewer.get('/dashboard/connections')).html);
    for (const [path, form] of [
      ['/dashboard/connections/new/helpdesk', { connection_name: 'viewer-made' }],
      ['/dashboard/webhooks', { url: 'https://example.com/hook' }],
      ['/dashboard/api-credentials', { name: 'viewer-cred' }],
      ['/dashboard/users/invitations', { username: 'x', role: 'admin' }],
    ] as const) {
      const res = await viewer.post(path, { _csrf: csrf, ...form });
      expect(res.status, path).toBe(403);
      expect(res.html, path).toContain('Your role (viewer) does not allow this');
    }
    for (const path of ['/dashboard/connections/new', '/dashboard/users'])
      expect((await viewer.get(path)).status, path).toBe(403);
    expect(await h.running.services.store.listApiCredentials()).not.toContainEqual(
      expect.objectContaining({ name: 'viewer-cred' }),
    );
    // Signing out is not a change: allowed.
    const other = new DashboardClient(h.url);
    await other.signIn('a-good-long-password-1', 'val');
    expect(
      (
        await other.post('/dashboard/sign-out', {
          _csrf: DashboardClient.csrf((await other.get('/dashboard/connections')).html),
        })
      ).status,
    ).toBe(303);
  });

  it('lets an operator change connections but not users or API credentials', async () => {
    const made = await operator.submit('/dashboard/connections/new/helpdesk', '/dashboard/connections/new/helpdesk', {
      connection_name: 'desk-by-operator',
      auth_kind: 'api_key',
    });
    expect(made.status, made.html.slice(0, 500)).toBe(303);
    const csrf = DashboardClient.csrf((await operator.get('/dashboard/connections')).html);
    expect((await operator.post('/dashboard/api-credentials', { _csrf: csrf, name: 'op-cred' })).status).toBe(403);
    expect(
      (await operator.post('/dashboard/users/invitations', { _csrf: csrf, username: 'y', role: 'admin' })).status,
    ).toBe(403);
    expect((await operator.get('/dashboard/users')).status).toBe(403);
    // The credentials page shows, read-only.
    const creds = await operator.get('/dashboard/api-credentials');
    expect(creds.status).toBe(200);
    expect(changingForms(creds.html)).toEqual([]);
  });

  it('applies a role change at the next request, and a removal ends the sessions', async () => {
    const otto = (await h.running.services.store.getDashboardUserByName('otto'))!;
    const csrf = DashboardClient.csrf((await operator.get('/dashboard/connections')).html);
    const demoted = await admin.submit('/dashboard/users', `/dashboard/users/${otto.id}/role`, { role: 'viewer' });
    expect(demoted.status).toBe(303);
    const refused = await operator.post('/dashboard/connections/new/helpdesk', {
      _csrf: csrf,
      connection_name: 'late',
    });
    expect(refused.status).toBe(403);
    expect((await admin.submit('/dashboard/users', `/dashboard/users/${otto.id}/delete`, {})).status).toBe(303);
    const gone = await operator.get('/dashboard/connections');
    expect(gone.status).toBe(303);
    expect(gone.location).toContain('/dashboard/sign-in');
  });

  it('keeps the last admin: neither demoted nor removed', async () => {
    const me = (await h.running.services.store.getDashboardUserByName('admin'))!;
    const demote = await admin.submit('/dashboard/users', `/dashboard/users/${me.id}/role`, { role: 'operator' });
    expect(demote.status).toBe(409);
    expect(demote.html).toContain('only admin');
    expect((await admin.submit('/dashboard/users', `/dashboard/users/${me.id}/delete`, {})).status).toBe(409);
    expect((await h.running.services.store.getDashboardUser(me.id))!.role).toBe('admin');
    // With a second admin, the first may step down.
    const val = (await h.running.services.store.getDashboardUserByName('val'))!;
    expect((await admin.submit('/dashboard/users', `/dashboard/users/${val.id}/role`, { role: 'admin' })).status).toBe(
      303,
    );
    expect(
      (await admin.submit('/dashboard/users', `/dashboard/users/${me.id}/role`, { role: 'operator' })).status,
    ).toBe(303);
    expect((await admin.get('/dashboard/users')).status).toBe(403);
  });

  it('audits invitations, acceptances and role changes with their actor', async () => {
    const events = await h.running.services.store.listAuditEvents({ order: 'desc', limit: 500 });
    const find = (action: string) => events.filter((e) => e.action === action);
    expect(find('dashboard_user.invite').map((e) => e.actorId)).toContain('admin');
    expect(find('dashboard.invitation_accepted').map((e) => e.actorId)).toEqual(
      expect.arrayContaining(['vera@example.com', 'val', 'otto']),
    );
    expect(find('dashboard_user.role').length).toBeGreaterThanOrEqual(3);
    expect(find('dashboard_user.delete').length).toBe(1);
    expect(JSON.stringify(events)).not.toContain('a-good-long-password-1');
  });
});
