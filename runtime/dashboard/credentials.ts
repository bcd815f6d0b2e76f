/** API credentials: the client id and secret an application builds its client from; the secret is shown once. */
import type { Request, Response, Router } from 'express';
import { createApiCredential } from '../auth/service-auth.ts';
import { checkRequest } from '../api/validate.ts';
import { ServiceError } from '../../core/errors.ts';
import { BASE, fieldErrorsOf, formString, render, type DashboardContext } from './context.ts';
import { attachErrors, fieldId, type Field } from './fields.ts';
import type { FieldError } from '../../core/tool-types.ts';

export function credentialRoutes(r: Router, ctx: DashboardContext): void {
  const { s } = ctx;

  const listPage = async (req: Request, res: Response, name = '', errors: FieldError[] = [], status = 200) => {
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
            revokeHref: `${BASE}/api-credentials/${encodeURIComponent(c.id)}/revoke`,
          })),
      },
      status,
    );
  };

  r.get('/api-credentials', async (req, res) => listPage(req, res));

  r.post('/api-credentials', async (req, res) => {
    const name = formString(req.body, 'name').trim();
    try {
      checkRequest('createApiCredential', 'body', { name });
    } catch (e) {
      const errors = fieldErrorsOf(e);
      if (!errors) throw e;
      await listPage(req, res, name, errors, 400);
      return;
    }
    const { credential, clientSecret } = await createApiCredential(s.store, name || 'API credential');
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
