/** API credentials: the client id and secret an application builds its client from; the secret is shown once. */
import type { Request, Response, Router } from 'express';
import { createApiCredential, grantable } from '../auth/service-auth.ts';
import { ALL_SCOPES, SCOPE_DESCRIPTIONS, SCOPES } from '../../core/api/scopes.ts';
import { checkRequest } from '../api/validate.ts';
import { invalidInput, ServiceError } from '../../core/errors.ts';
import { BASE, fieldErrorsOf, formString, render, type DashboardContext } from './context.ts';
import { attachErrors, fieldId, type Field } from './fields.ts';
import type { FieldError } from '../../core/tool-types.ts';

export function credentialRoutes(r: Router, ctx: DashboardContext): void {
  const { s } = ctx;

  const listPage = async (
    req: Request,
    res: Response,
    name = '',
    errors: FieldError[] = [],
    status = 200,
    chosen: readonly string[] = [ALL_SCOPES],
    connectionNames = '',
  ) => {
    const list = await s.store.listApiCredentials();
    const nameField: Field = {
      id: fieldId('name'),
      name: 'name',
      label: 'Name',
      kind: 'input',
      type: 'text',
      value: name,
      hint: 'What uses it, e.g. “production app”.',
      autocomplete: 'off',
    };
    const general = attachErrors([nameField], errors, (e) => e.field);
    render(
      ctx,
      req,
      res,
      'credentials',
      {
        title: 'API credentials',
        nav: 'credentials',
        envUrl: s.config.publicUrl,
        nameField,
        errors: general,
        scopeError: errors.find((e) => e.field.startsWith('scopes'))?.message,
        connectionNamesError: errors.find((e) => e.field.startsWith('connection_names'))?.message,
        connectionNames,
        allChosen: chosen.includes(ALL_SCOPES),
        scopeChoices: SCOPES.map((sc) => ({
          scope: sc,
          description: SCOPE_DESCRIPTIONS[sc],
          checked: chosen.includes(sc),
        })),
        credentials: list
          .slice()
          .reverse()
          .map((c) => ({
            id: c.id,
            name: c.name,
            clientId: c.clientId,
            createdAt: c.createdAt,
            lastUsedAt: c.lastUsedAt,
            revokedAt: c.revokedAt,
            scopes: c.scopes === ALL_SCOPES ? 'all scopes' : c.scopes.join(', '),
            connections: c.connectionNames ? c.connectionNames.join(', ') : '',
            revokeHref: `${BASE}/api-credentials/${encodeURIComponent(c.id)}/revoke`,
          })),
      },
      status,
    );
  };

  r.get('/api-credentials', async (req, res) => listPage(req, res));

  r.post('/api-credentials', async (req, res) => {
    const name = formString(req.body, 'name').trim();
    const raw = (req.body as Record<string, unknown>).scopes;
    const chosen = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter(
      (v): v is string => typeof v === 'string',
    );
    // The form marks that it offered the scope checkboxes: a post without that mark (a script that sends the name
    // alone) gets every scope, as before scopes existed; the form with every box cleared is refused.
    const offered = formString(req.body, 'scopes_offered') === '1';
    const scopes = chosen.includes(ALL_SCOPES) || (!offered && !chosen.length) ? [ALL_SCOPES] : chosen;
    const connectionText = formString(req.body, 'connection_names').trim();
    const connectionNames = connectionText
      ? connectionText
          .split(',')
          .map((n) => n.trim())
          .filter(Boolean)
      : null;
    try {
      if (!scopes.length)
        throw invalidInput(
          [{ field: 'scopes', message: 'choose at least one scope (or all scopes)' }],
          'API credential',
        );
      checkRequest('createApiCredential', 'body', { name, scopes, connection_names: connectionNames });
    } catch (e) {
      const errors = fieldErrorsOf(e);
      if (!errors) throw e;
      await listPage(req, res, name, errors, 400, chosen, connectionText);
      return;
    }
    // The dashboard's user is an administrator: any scope may be granted.
    const { credential, clientSecret } = await createApiCredential(
      s.store,
      name || 'API credential',
      undefined,
      grantable(undefined, { scopes, connectionNames }),
    );
    // Rendered in this response only (no redirect, nothing kept): the page is no-store like every dashboard page.
    render(ctx, req, res, 'credential-created', {
      title: 'API credential created',
      nav: 'credentials',
      envUrl: s.config.publicUrl,
      name: credential.name,
      clientId: credential.clientId,
      clientSecret,
    });
  });

  const credentialOrThrow = async (id: string) => {
    const c = await s.store.getApiCredential(id);
    if (!c) throw new ServiceError(404, 'not_found', `No API credential with id "${id}"`);
    return c;
  };

  r.get('/api-credentials/:id/revoke', async (req, res) => {
    const c = await credentialOrThrow(req.params.id);
    if (c.revokedAt)
      throw new ServiceError(409, 'already_revoked', `The API credential “${c.name}” is already revoked.`);
    render(ctx, req, res, 'confirm', {
      title: `Revoke ${c.name}?`,
      nav: 'credentials',
      message: `Applications using client id ${c.clientId} can no longer get tokens, and the tokens they hold stop working now. This cannot be undone; create a new credential to replace it.`,
      action: `${BASE}/api-credentials/${encodeURIComponent(c.id)}/revoke`,
      button: 'Revoke the credential',
      cancel: `${BASE}/api-credentials`,
    });
  });

  r.post('/api-credentials/:id/revoke', async (req, res) => {
    const c = await credentialOrThrow(req.params.id);
    await s.store.revokeApiCredential(c.id, Date.now());
    s.tokens.forgetCredential(c.id);
    res.redirect(303, `${BASE}/api-credentials?done=credential-revoked`);
  });
}
