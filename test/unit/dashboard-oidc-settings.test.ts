/**
 * The DASHBOARD_OIDC_* settings as read (runtime/config.ts) and the role a user's groups give
 * (runtime/dashboard/oidc.ts): the highest mapped role wins, else the default role, else none.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../runtime/config.ts';
import { roleForGroups } from '../../runtime/dashboard/oidc.ts';

const base = { PORT: '0', DATA_DIR: '/tmp/acs-unused', DASHBOARD_OIDC_ISSUER: 'https://login.acme.example/' };

describe('DASHBOARD_OIDC_* settings', () => {
  it('is off without an issuer', () => {
    expect(loadConfig({ PORT: '0', DATA_DIR: '/tmp/acs-unused' }).dashboardOidc).toBeUndefined();
  });

  it('reads the mapping, domains and defaults', () => {
    const c = loadConfig({
      ...base,
      DASHBOARD_OIDC_CLIENT_ID: 'acs',
      DASHBOARD_OIDC_ALLOWED_DOMAINS: 'Acme.example, acme.de',
      DASHBOARD_OIDC_ROLES: 'admins:admin, team:ops:operator ,staff:viewer',
    }).dashboardOidc!;
    expect(c.displayName).toBe('login.acme.example');
    expect(c.allowedDomains).toEqual(['acme.example', 'acme.de']);
    expect(c.groupsClaim).toBe('groups');
    expect([...c.roles]).toEqual([
      ['admins', 'admin'],
      ['team:ops', 'operator'],
      ['staff', 'viewer'],
    ]);
    expect(c.defaultRole).toBeUndefined();
    expect(c.clientSecret).toBeUndefined();
  });

  it('gives the highest role of the groups, else the default, else none', () => {
    const roles = new Map([
      ['admins', 'admin'],
      ['ops', 'operator'],
      ['staff', 'viewer'],
    ] as const);
    expect(roleForGroups({ roles }, ['staff', 'admins', 'ops'])).toBe('admin');
    expect(roleForGroups({ roles }, ['staff', 'ops'])).toBe('operator');
    expect(roleForGroups({ roles }, ['ops', 'staff'])).toBe('operator');
    expect(roleForGroups({ roles }, ['other'])).toBeUndefined();
    expect(roleForGroups({ roles }, [])).toBeUndefined();
    expect(roleForGroups({ roles, defaultRole: 'viewer' }, ['other'])).toBe('viewer');
    // A mapped group wins over the default even when the default is higher: the mapping is the operator's word.
    expect(roleForGroups({ roles, defaultRole: 'operator' }, ['staff'])).toBe('viewer');
    // Group names are exact (no case folding).
    expect(roleForGroups({ roles }, ['Admins'])).toBeUndefined();
  });
});
