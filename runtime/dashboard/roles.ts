/**
 * Dashboard roles (issue 37, item 4), enforced on every route by the router (runtime/dashboard/index.ts) and shown in
 * the pages (a form a role may not send is not rendered):
 *
 * - viewer: every page that shows something; no change. Every POST but signing out is refused (403), and so is
 *   every page that is only a form (new, edit, delete, revoke, rotate).
 * - operator: everything a viewer may, and every change to connections, accounts, authorization links, tools, MCP
 *   servers and their URLs, webhooks and triggers — but not users, API credentials (which grant API access, so
 *   they are the same as handing out keys) or the service's settings and keys (which are not changed through the
 *   dashboard at all).
 * - admin: everything, the Users page included.
 */
import type { DashboardRole } from '../store/types.ts';

export const ROLES: readonly DashboardRole[] = ['viewer', 'operator', 'admin'];

const RANK: Record<DashboardRole, number> = { viewer: 0, operator: 1, admin: 2 };

export function isRole(v: unknown): v is DashboardRole {
  return v === 'viewer' || v === 'operator' || v === 'admin';
}

/** Whether `role` may do what `needed` may. */
export function allows(role: DashboardRole, needed: DashboardRole): boolean {
  return RANK[role] >= RANK[needed];
}

/** Pages that are only a form making a change. */
const FORM_PAGE = /\/(?:new|edit|delete|revoke|rotate-secret)(?:\/[^/]*)?$/;

/** The least role that may make this request (path relative to /dashboard). */
export function requiredRole(method: string, path: string): DashboardRole {
  if (path === '/users' || path.startsWith('/users/')) return 'admin';
  if (path.startsWith('/api-credentials')) return method === 'GET' && path === '/api-credentials' ? 'viewer' : 'admin';
  if (method === 'POST') return path === '/sign-out' ? 'viewer' : 'operator';
  if (FORM_PAGE.test(path)) return 'operator';
  return 'viewer';
}

/** What the pages may offer the signed-in user (templates read `can.operate`, `can.admin`). */
export function capabilities(role: DashboardRole): { operate: boolean; admin: boolean } {
  return { operate: allows(role, 'operator'), admin: allows(role, 'admin') };
}
