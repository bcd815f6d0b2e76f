/**
 * Dashboard users (issue 37, item 4), admins only (runtime/dashboard/roles.ts): the list with each user's role and
 * how they sign in, invitations (a one-time link the admin copies: a random token, stored as its SHA-256, expiring,
 * used once), a role change and a removal — neither of which may leave the dashboard without an admin.
 *
 * The invitee's side (`/dashboard/invitations/:token`) is before sign-in: `invitationRoutes`.
 */
import { createHash } from 'node:crypto';
import type { Request, Response, Router } from 'express';
import { newId, randomSecret } from '../ids.ts';
import { MIN_PASSWORD_LENGTH } from '../config.ts';
import { hashPassword } from './password.ts';
import { BASE, errorPage, formString, render, session, type DashboardContext } from './context.ts';
import { isRole, ROLES } from './roles.ts';
import type { DashboardInvitation } from '../store/types.ts';

/** How long an invitation link works. */
export const INVITATION_TTL_MS = 7 * 24 * 3600 * 1000;
const USERNAME = /^[\p{L}\p{N}._@+-]{1,200}$/u;
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export function invitationUrl(publicUrl: string, token: string): string {
  return `${publicUrl}${BASE}/invitations/${token}`;
}

export function userRoutes(r: Router, ctx: DashboardContext): void {
  const { s } = ctx;

  const listPage = async (req: Request, res: Response, status = 200, extra: Record<string, unknown> = {}) => {
    const me = session(res)!;
    const users = (await s.store.listDashboardUsers()).map((u) => ({
      ...u,
      self: u.id === me.userId,
      signIn: [u.passwordHash.startsWith('scrypt$') ? 'password' : '', u.oidcSubject ? 'OpenID Connect' : '']
        .filter(Boolean)
        .join(', '),
      roleAction: `${BASE}/users/${encodeURIComponent(u.id)}/role`,
      deleteAction: `${BASE}/users/${encodeURIComponent(u.id)}/delete`,
      roleChoices: ROLES.map((role) => ({ role, selected: role === u.role })),
    }));
    const invitations = (await s.store.listDashboardInvitations(Date.now())).map((i) => ({
      ...i,
      revokeAction: `${BASE}/users/invitations/${encodeURIComponent(i.id)}/revoke`,
    }));
    render(
      ctx,
      req,
      res,
      'users',
      { title: 'Users', nav: 'users', users, invitations, roles: ROLES, ...extra },
      status,
    );
  };

  r.get('/users', (req, res) => listPage(req, res));

  r.post('/users/invitations', async (req, res) => {
    const username = formString(req.body, 'username').trim();
    const role = formString(req.body, 'role');
    const errors: string[] = [];
    if (!USERNAME.test(username))
      errors.push('The username or e-mail must be 1 to 200 letters, digits or . _ @ + -, without spaces.');
    else if (await s.store.getDashboardUserByName(username)) errors.push(`There is already a user named ${username}.`);
    if (!isRole(role)) errors.push('Choose a role: viewer, operator or admin.');
    if (errors.length) return listPage(req, res, 400, { inviteError: errors.join(' '), inviteName: username });
    const token = randomSecret(32);
    const now = Date.now();
    const invitation: DashboardInvitation = {
      id: newId('inv'),
      tokenHash: sha256(token),
      username,
      role: role as DashboardInvitation['role'],
      createdBy: session(res)!.username,
      createdAt: now,
      expiresAt: now + INVITATION_TTL_MS,
      usedAt: null,
    };
    await s.store.createDashboardInvitation(invitation);
    render(ctx, req, res, 'invitation-created', {
      title: 'Invitation',
      nav: 'users',
      invitation,
      link: invitationUrl(s.config.publicUrl, token),
    });
  });

  r.post('/users/invitations/:id/revoke', async (req, res) => {
    if (!(await s.store.deleteDashboardInvitation(req.params.id)))
      return errorPage(ctx, req, res, 404, 'Not found', 'There is no such invitation.');
    res.redirect(303, `${BASE}/users?done=invitation-revoked`);
  });

  r.post('/users/:id/role', async (req, res) => {
    const role = formString(req.body, 'role');
    if (!isRole(role)) return errorPage(ctx, req, res, 400, 'Bad role', 'Choose a role: viewer, operator or admin.');
    const result = await s.store.setDashboardUserRole(req.params.id, role, Date.now());
    if (result === 'not_found') return errorPage(ctx, req, res, 404, 'Not found', 'There is no such user.');
    if (result === 'last_admin')
      return errorPage(
        ctx,
        req,
        res,
        409,
        'The last admin stays',
        'This is the only admin: make another user an admin first, so that someone can still manage users.',
      );
    res.redirect(303, `${BASE}/users?done=user-role-changed`);
  });

  r.post('/users/:id/delete', async (req, res) => {
    const result = await s.store.deleteDashboardUser(req.params.id);
    if (result === 'not_found') return errorPage(ctx, req, res, 404, 'Not found', 'There is no such user.');
    if (result === 'last_admin')
      return errorPage(
        ctx,
        req,
        res,
        409,
        'The last admin stays',
        'This is the only admin: make another user an admin first, so that someone can still manage users.',
      );
    res.redirect(303, `${BASE}/users?done=user-removed`);
  });
}

/** The invitee's side, before sign-in: the link's page asks for a password, then signs them in. */
export function invitationRoutes(r: Router, ctx: DashboardContext): void {
  const { s } = ctx;
  const page = async (req: Request, res: Response, token: string, status: number, error?: string) => {
    const invitation = /^[\w-]{20,100}$/.test(token)
      ? await s.store.getDashboardInvitation(sha256(token), Date.now())
      : undefined;
    if (!invitation) {
      render(
        ctx,
        req,
        res,
        'error',
        {
          title: 'Invitation not valid',
          message:
            'This invitation link was used already, has expired or was revoked. Ask an admin of the dashboard for a new one.',
        },
        410,
      );
      return;
    }
    const { nonce, setCookie } = s.dashboard.signInNonce(req.headers.cookie);
    if (setCookie) res.append('set-cookie', setCookie);
    render(
      ctx,
      req,
      res,
      'invitation',
      {
        title: 'Accept invitation',
        invitation,
        csrf: s.dashboard.signInCsrf(nonce),
        minLength: MIN_PASSWORD_LENGTH,
        error,
      },
      status,
    );
  };

  r.get('/invitations/:token', (req, res) => page(req, res, req.params.token, 200));

  r.post('/invitations/:token', async (req, res) => {
    const token = req.params.token;
    if (!s.dashboard.checkSignInCsrf(req.headers.cookie, formString(req.body, '_csrf')))
      return page(req, res, token, 403, 'The form expired or did not come from this page. Please try again.');
    const password = formString(req.body, 'password');
    if (password.length < MIN_PASSWORD_LENGTH)
      return page(req, res, token, 400, `The password must have at least ${MIN_PASSWORD_LENGTH} characters.`);
    if (password.length > 1000) return page(req, res, token, 400, 'The password must have at most 1000 characters.');
    if (password !== formString(req.body, 'password_again'))
      return page(req, res, token, 400, 'The two passwords are not the same.');
    const invitation = /^[\w-]{20,100}$/.test(token)
      ? await s.store.getDashboardInvitation(sha256(token), Date.now())
      : undefined;
    if (!invitation) return page(req, res, token, 410);
    const now = Date.now();
    const user = {
      id: newId('du'),
      username: invitation.username,
      passwordHash: await hashPassword(password),
      role: invitation.role,
      oidcSubject: null,
      createdAt: now,
      updatedAt: now,
    };
    const result = await s.store.acceptDashboardInvitation(sha256(token), user, now);
    if (result === 'invalid') return page(req, res, token, 410);
    if (result === 'taken')
      return page(req, res, token, 409, `A user named ${invitation.username} exists already; ask an admin.`);
    await s.audit.record(
      {
        actorType: 'dashboard_user',
        actorId: user.username,
        sourceAddress: req.ip ?? null,
        requestId: req.requestId ?? null,
      },
      {
        action: 'dashboard.invitation_accepted',
        targetType: 'dashboard_user',
        targetId: user.username,
        changes: { role: user.role, invited_by: invitation.createdBy, password: 'set' },
      },
    );
    res.append('set-cookie', await s.dashboard.openSession(user.id, now));
    res.append('set-cookie', s.dashboard.clearCookie(s.dashboard.signInCookie));
    res.redirect(303, `${BASE}/connections`);
  });
}
