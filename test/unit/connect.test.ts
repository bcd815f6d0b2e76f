/**
 * Issue 38's pure parts: the connect page's branding settings (a bad value names the setting) and the scope rules of
 * least privilege (a broader granted scope covers a narrower one; Microsoft's long form covers the short one).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../runtime/config.ts';
import { grantedFrom, missingScopes, scopesForTools } from '../../runtime/connect/scopes.ts';
import { connectors, getTool } from '../../runtime/connectors/catalog.ts';

const refused = (env: Record<string, string>): ConfigError => {
  try {
    loadConfig({ PORT: '8080', ...env });
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('loadConfig accepted it');
};

describe('connect page branding settings', () => {
  it('has defaults, and takes a name, an https logo and a dark enough colour', () => {
    expect(loadConfig({ PORT: '8080' }).connectBranding).toEqual({
      productName: 'Agent connector service',
      logoUrl: null,
      primaryColour: '#1f5fbf',
    });
    const c = loadConfig({
      PORT: '8080',
      CONNECT_PRODUCT_NAME: 'Acme',
      CONNECT_LOGO_URL: 'https://cdn.example.com/logo.svg',
      CONNECT_PRIMARY_COLOUR: '#2D3A8C',
    }).connectBranding;
    expect(c).toEqual({ productName: 'Acme', logoUrl: 'https://cdn.example.com/logo.svg', primaryColour: '#2d3a8c' });
  });

  it('refuses a logo that is not https, a colour not #rrggbb, and one too light for white text', () => {
    expect(refused({ CONNECT_LOGO_URL: 'http://cdn.example.com/logo.svg' }).message).toMatch(/CONNECT_LOGO_URL/);
    expect(refused({ CONNECT_PRIMARY_COLOUR: 'blue' }).message).toMatch(/CONNECT_PRIMARY_COLOUR.*#rrggbb/);
    expect(refused({ CONNECT_PRIMARY_COLOUR: '#ffee00' }).message).toMatch(/too light/);
  });
});

describe('scopes per tool', () => {
  const mail = connectors.get('mail')!.auth[0]!;
  const tool = (n: string) => getTool(n)!;

  it('a link for tools asks for the base scopes and theirs, once each', () => {
    expect(scopesForTools('mail', mail, ['mail_list_messages', 'mail_get_message'])).toEqual([
      'offline_access',
      'User.Read',
      'Mail.Read',
    ]);
  });

  it('a broader scope covers the narrower one it includes; the long form covers the short one', () => {
    expect(missingScopes({ grantedScopes: ['Tasks.ReadWrite'] }, tool('mail_todo_lists_list'), mail)).toEqual([]);
    expect(missingScopes({ grantedScopes: ['Tasks.Read'] }, tool('mail_todo_lists_create'), mail)).toEqual([
      'Tasks.ReadWrite',
    ]);
    expect(
      missingScopes({ grantedScopes: ['https://graph.microsoft.com/Mail.Send'] }, tool('mail_send_message'), mail),
    ).toEqual([]);
    expect(missingScopes({ grantedScopes: null }, tool('mail_send_message'), mail)).toEqual([]);
  });

  it('records the token response scope, else what was asked for', () => {
    expect(grantedFrom('Mail.Read  User.Read', ['x'])).toEqual(['Mail.Read', 'User.Read']);
    expect(grantedFrom(undefined, ['Mail.Read'])).toEqual(['Mail.Read']);
  });
});
