import type { Request, Response } from 'express';
import type { Services } from '../services.ts';
import type { ConnectionAdmin } from '../connection-admin.ts';
import type { Views } from './views.ts';
import type { SignedInSession } from './auth.ts';
import { capabilities } from './roles.ts';
import { ServiceError } from '../../core/errors.ts';
import type { FieldError } from '../../core/tool-types.ts';

export interface DashboardContext {
  s: Services;
  m: ConnectionAdmin;
  views: Views;
}

export const BASE = '/dashboard';

/** Messages shown after a redirect, chosen by a code in the URL (never text from the URL itself). */
const NOTICES: Record<string, string> = {
  'signed-out': 'You are signed out.',
  'connection-created': 'Connection created.',
  'connection-saved': 'Connection saved.',
  'connection-deleted': 'Connection deleted, with its connected accounts.',
  'account-saved': 'Connected account saved; its credentials are sealed and will not be shown again.',
  'account-deleted': 'Connected account deleted.',
  'credential-revoked': 'API credential revoked: its tokens no longer work.',
  'mcp-server-created': 'MCP server created. Make a URL for each end user below.',
  'mcp-server-deleted': 'MCP server deleted: its URLs no longer work.',
  'mcp-url-revoked': 'URL revoked: MCP clients using it are refused from now on.',
  'mcp-idp-saved': 'Sign-in settings saved: the OAuth endpoint’s next sign-ins use them.',
  'webhook-deleted': 'Webhook deleted: no more events are sent to it.',
  'user-role-changed': 'Role changed: it applies to the user’s open sessions at once.',
  'user-removed': 'User removed: their sessions have ended.',
  'invitation-revoked': 'Invitation revoked: its link no longer works.',
  'webhook-redelivered': 'The event will be sent again in a moment; its attempts show below.',
};

export function session(res: Response): SignedInSession | undefined {
  return res.locals.session as SignedInSession | undefined;
}

export function render(
  ctx: DashboardContext,
  req: Request,
  res: Response,
  view: string,
  data: Record<string, unknown>,
  status = 200,
): void {
  const done = typeof req.query.done === 'string' ? NOTICES[req.query.done] : undefined;
  const s = session(res);
  res
    .status(status)
    .type('html')
    .send(
      ctx.views.render(view, {
        notice: done,
        ...data,
        session: s ? { username: s.username, role: s.role, csrf: s.csrf } : undefined,
        can: s ? capabilities(s.role) : { operate: false, admin: false },
      }),
    );
}

export function errorPage(
  ctx: DashboardContext,
  req: Request,
  res: Response,
  status: number,
  title: string,
  message: string,
): void {
  render(ctx, req, res, 'error', { title, message }, status);
}

/** A string field of a urlencoded form (the first one when repeated); '' when absent. */
export function formString(body: unknown, name: string): string {
  const v = (body as Record<string, unknown> | undefined)?.[name];
  if (Array.isArray(v)) return typeof v[0] === 'string' ? v[0] : '';
  return typeof v === 'string' ? v : '';
}

/** Every value of a repeated form field (checkboxes). */
export function formList(body: unknown, name: string): string[] {
  const v = (body as Record<string, unknown> | undefined)?.[name];
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string');
  return typeof v === 'string' ? [v] : [];
}

export function queryValue(req: Request, name: string): string {
  const v = req.query[name];
  return typeof v === 'string' ? v : '';
}

/** The field errors of a validation failure, or undefined for any other error. */
export function fieldErrorsOf(e: unknown): FieldError[] | undefined {
  if (e instanceof ServiceError && e.status === 400 && Array.isArray(e.details)) return e.details;
  return undefined;
}

export const connectionPath = (name: string) => `${BASE}/connections/${encodeURIComponent(name)}`;
