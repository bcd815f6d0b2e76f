/**
 * MCP servers (issue 10): create a configuration (name, mode, connections and/or tools), make a URL for an end
 * user (shown once, on the page that made it), list a server's URLs, revoke one, delete a server. The same
 * service as the API (runtime/mcp/servers.ts), so names are checked and close ones suggested the same way.
 */
import type { Request, Response, Router } from 'express';
import { checkRequest } from '../api/validate.ts';
import { MCP_URL_DEFAULT_TTL, MCP_URL_MAX_TTL } from '../../core/api/endpoints.ts';
import type { FieldError } from '../../core/tool-types.ts';
import type { Operations } from '../../generated/api/types.ts';
import { connectors } from '../connectors/catalog.ts';
import { McpServers, urlStatus } from '../mcp/servers.ts';
import type { McpServerConfig } from '../store/types.ts';
import { BASE, fieldErrorsOf, formList, formString, render, type DashboardContext } from './context.ts';
import { attachErrors, fieldId, type Field } from './fields.ts';
import { firstSentence } from './views.ts';

const serverPath = (id: string) => `${BASE}/mcp-servers/${encodeURIComponent(id)}`;

interface CreateForm {
  name: string;
  mode: string;
  connections: string[];
  tools: string[];
  user_verify_url?: string;
}

interface IdpForm {
  issuer: string;
  client_id: string;
  client_secret: string;
  identifier_claim: string;
}

const idpField = (name: string, label: string, value: string, type: string, hint: string): Field => ({
  id: fieldId(`idp_${name}`),
  name,
  label,
  kind: 'input',
  type,
  value,
  hint,
  autocomplete: 'off',
});

export function mcpRoutes(r: Router, ctx: DashboardContext): void {
  const { s } = ctx;
  const servers = new McpServers(s);

  const listPage = async (
    req: Request,
    res: Response,
    form: CreateForm = { name: '', mode: 'tools', connections: [], tools: [] },
    errors: FieldError[] = [],
    status = 200,
  ) => {
    const { mcp_servers } = await servers.list();
    const all = await s.store.listConnections();
    const nameField: Field = {
      id: fieldId('name'),
      name: 'name',
      label: 'Name',
      kind: 'input',
      type: 'text',
      value: form.name,
      required: true,
      hint: 'Letters, digits, `_ . -`; e.g. “support-agent”.',
      autocomplete: 'off',
    };
    const modeField: Field = {
      id: fieldId('mode'),
      name: 'mode',
      label: 'Mode',
      kind: 'select',
      options: [
        { value: 'tools', label: 'tools: list every tool', selected: form.mode !== 'search' },
        {
          value: 'search',
          label: 'search: two tools, search_tools and execute_tool',
          selected: form.mode === 'search',
        },
      ],
      hint: 'Search mode suits many tools: the agent loads two, and finds the others by describing the task.',
    };
    const verifyField: Field = {
      id: fieldId('user_verify_url'),
      name: 'user_verify_url',
      label: 'User verification URL (optional)',
      kind: 'input',
      type: 'url',
      value: form.user_verify_url ?? '',
      hint:
        'Authorization links this server hands out send the user here after authorizing; your application confirms ' +
        'the user is the URL’s identifier (POST /v1/connected-accounts/verify). Without it, a link connects whoever opens it.',
      autocomplete: 'off',
    };
    const general = attachErrors([nameField, modeField, verifyField], errors, (e) => e.field);
    const chosenTools = new Set(form.tools);
    render(
      ctx,
      req,
      res,
      'mcp-servers',
      {
        title: 'MCP servers',
        nav: 'mcp',
        nameField,
        modeField,
        verifyField,
        errors: general,
        connections: all.map((c) => ({
          id: fieldId(`connection-${c.name}`),
          name: c.name,
          connector: c.connector,
          checked: form.connections.includes(c.name),
        })),
        connectors: [...connectors.values()].map((c) => ({
          name: c.name,
          title: c.title,
          open: c.toolNames.some((t) => chosenTools.has(t)),
          tools: c.toolNames.map((t) => ({
            id: fieldId(`tool-${t}`),
            name: t,
            checked: chosenTools.has(t),
          })),
        })),
        servers: mcp_servers.map((m) => ({ ...m, href: serverPath(m.id) })),
      },
      status,
    );
  };

  r.get('/mcp-servers', async (req, res) => listPage(req, res));

  r.post('/mcp-servers', async (req, res) => {
    const form: CreateForm = {
      name: formString(req.body, 'name').trim(),
      mode: formString(req.body, 'mode') || 'tools',
      connections: formList(req.body, 'connections'),
      tools: formList(req.body, 'tools'),
      user_verify_url: formString(req.body, 'user_verify_url').trim(),
    };
    let created: McpServerConfig;
    try {
      const { user_verify_url, ...rest } = form;
      const body = checkRequest<Operations['createMcpServer']['body']>('createMcpServer', 'body', {
        ...rest,
        ...(user_verify_url ? { user_verify_url } : {}),
      });
      created = await servers.create(body);
    } catch (e) {
      const errors = fieldErrorsOf(e);
      if (errors) return listPage(req, res, form, errors, 400);
      if ((e as { code?: string }).code === 'mcp_server_exists') {
        return listPage(req, res, form, [{ field: 'name', message: 'is taken by another MCP server' }], 409);
      }
      throw e;
    }
    res.redirect(303, `${serverPath(created.id)}?done=mcp-server-created`);
  });

  const serverPage = async (
    req: Request,
    res: Response,
    m: McpServerConfig,
    form = { identifier: '', days: '' },
    errors: FieldError[] = [],
    status = 200,
    idpForm?: IdpForm,
  ) => {
    const exposed = await servers.exposedTools(m);
    // The OAuth endpoint's sign-in (docs/mcp.md "OAuth"): this server's own OpenID provider, or the service's.
    const idp = await s.store.getMcpOAuthSettings(m.id);
    const idpValues: IdpForm = idpForm ?? {
      issuer: idp?.oidcIssuer ?? '',
      client_id: idp?.oidcClientId ?? '',
      client_secret: '',
      identifier_claim: idp?.identifierClaim ?? 'sub',
    };
    const idpFields: Field[] = [
      idpField('issuer', 'Issuer', idpValues.issuer, 'url', 'The OpenID provider’s issuer URL (https).'),
      idpField('client_id', 'Client id', idpValues.client_id, 'text', 'This service’s client at that provider.'),
      idpField(
        'client_secret',
        'Client secret',
        '',
        'password',
        idp?.oidcClientSecretSealed
          ? 'A secret is stored; leave empty to keep it (same issuer and client id).'
          : 'Leave empty for a public client.',
      ),
      idpField(
        'identifier_claim',
        'Identifier claim',
        idpValues.identifier_claim,
        'text',
        'The claim whose value is the end user’s identifier (sub, email…).',
      ),
    ];
    // A refused sign-in form shows its errors at its fields; the URL form's errors at its own.
    const idpErrors = attachErrors(idpFields, idpForm ? errors : [], (e) =>
      e.field.replace(/^oauth_identity_provider\./, ''),
    );
    if (idpForm) errors = [];
    const urls = (await s.store.listMcpUrls(m.id)).map((u) => ({
      id: u.id,
      identifier: u.identifier,
      status: urlStatus(u),
      createdAt: u.createdAt,
      expiresAt: u.expiresAt,
      lastUsedAt: u.lastUsedAt,
      revokeHref: `${serverPath(m.id)}/urls/${encodeURIComponent(u.id)}/revoke`,
    }));
    const identifierField: Field = {
      id: fieldId('identifier'),
      name: 'identifier',
      label: 'Identifier',
      kind: 'input',
      type: 'text',
      value: form.identifier,
      required: true,
      hint: 'The end user the tools run for, as your application names them (their connected accounts’ identifier).',
      autocomplete: 'off',
    };
    const daysField: Field = {
      id: fieldId('days'),
      name: 'days',
      label: 'Expires in (days)',
      kind: 'input',
      type: 'number',
      value: form.days,
      min: 1,
      max: MCP_URL_MAX_TTL / 86_400,
      step: '1',
      inputmode: 'numeric',
      placeholder: String(MCP_URL_DEFAULT_TTL / 86_400),
    };
    const general = attachErrors([identifierField, daysField], errors, (e) =>
      e.field === 'expires_in' ? 'days' : e.field,
    );
    render(
      ctx,
      req,
      res,
      'mcp-server',
      {
        title: m.name,
        nav: 'mcp',
        server: {
          ...servers.view(m, urls.filter((u) => u.status === 'active').length, exposed.length),
          href: serverPath(m.id),
        },
        tools: exposed.map((e) => ({
          name: e.tool.name,
          title: e.tool.title,
          summary: firstSentence(e.tool.description),
          connection: e.connectionName,
          problem: e.problem,
        })),
        identifierField,
        daysField,
        errors: general,
        urls,
        idp: {
          own: !!idp,
          service: s.config.mcpOAuth.oidc?.issuer ?? null,
          fields: idpFields,
          errors: idpErrors,
          callback: `${s.config.publicUrl}/oauth/mcp/callback`,
        },
      },
      status,
    );
  };

  r.post('/mcp-servers/:id/identity-provider', async (req, res) => {
    const m = await servers.get(req.params.id);
    const form: IdpForm = {
      issuer: formString(req.body, 'issuer').trim(),
      client_id: formString(req.body, 'client_id').trim(),
      client_secret: formString(req.body, 'client_secret'),
      identifier_claim: formString(req.body, 'identifier_claim').trim() || 'sub',
    };
    const clear = formString(req.body, 'clear') === '1';
    try {
      const body = checkRequest<Operations['updateMcpServer']['body']>('updateMcpServer', 'body', {
        oauth_identity_provider: clear
          ? null
          : {
              issuer: form.issuer,
              client_id: form.client_id,
              ...(form.client_secret ? { client_secret: form.client_secret } : {}),
              identifier_claim: form.identifier_claim,
            },
      });
      await servers.update(m.id, body);
    } catch (e) {
      const errors = fieldErrorsOf(e);
      if (!errors) throw e;
      return serverPage(req, res, m, undefined, errors, 400, { ...form, client_secret: '' });
    }
    res.redirect(303, `${serverPath(m.id)}?done=mcp-idp-saved`);
  });

  r.get('/mcp-servers/:id', async (req, res) => serverPage(req, res, await servers.get(req.params.id)));

  r.post('/mcp-servers/:id/urls', async (req, res) => {
    const m = await servers.get(req.params.id);
    const form = { identifier: formString(req.body, 'identifier'), days: formString(req.body, 'days').trim() };
    const days = form.days === '' ? undefined : Number(form.days);
    let made;
    try {
      if (days !== undefined && !Number.isInteger(days)) {
        throw Object.assign(new Error('days'), { dashboardErrors: [{ field: 'days', message: 'must be whole days' }] });
      }
      const body = checkRequest<Operations['createMcpUrl']['body']>('createMcpUrl', 'body', {
        identifier: form.identifier,
        ...(days !== undefined ? { expires_in: days * 86_400 } : {}),
      });
      made = await servers.createUrl(m.id, body.identifier, body.expires_in ?? undefined);
    } catch (e) {
      const errors =
        (e as { dashboardErrors?: FieldError[] }).dashboardErrors ??
        fieldErrorsOf(e)?.map((x) =>
          x.field === 'expires_in'
            ? { field: 'days', message: `must be from 1 to ${MCP_URL_MAX_TTL / 86_400} days` }
            : x,
        );
      if (!errors) throw e;
      return serverPage(req, res, m, form, errors, 400);
    }
    // Rendered in this response only (no redirect, nothing kept): the page is no-store like every dashboard page.
    render(ctx, req, res, 'mcp-url-created', {
      title: `MCP URL for ${made.identifier}`,
      nav: 'mcp',
      server: { name: m.name, href: serverPath(m.id) },
      identifier: made.identifier,
      url: made.url,
      expiresAt: Date.parse(made.expires_at),
      config: JSON.stringify({ mcpServers: { [m.name]: { url: made.url } } }, null, 2),
    });
  });

  r.get('/mcp-servers/:id/urls/:urlId/revoke', async (req, res) => {
    const m = await servers.get(req.params.id);
    const u = (await s.store.listMcpUrls(m.id)).find((x) => x.id === req.params.urlId);
    if (!u || u.revokedAt !== null) {
      return serverPage(
        req,
        res,
        m,
        undefined,
        [{ field: 'url', message: 'is not a URL of this server that can still be revoked' }],
        404,
      );
    }
    render(ctx, req, res, 'confirm', {
      title: `Revoke the URL of ${u.identifier}?`,
      nav: 'mcp',
      message: `MCP clients using this URL of “${m.name}” for ${u.identifier} stop working now. This cannot be undone; make a new URL to replace it.`,
      action: `${serverPath(m.id)}/urls/${encodeURIComponent(u.id)}/revoke`,
      button: 'Revoke the URL',
      cancel: serverPath(m.id),
    });
  });

  r.post('/mcp-servers/:id/urls/:urlId/revoke', async (req, res) => {
    const m = await servers.get(req.params.id);
    await servers.revokeUrl(m.id, req.params.urlId);
    res.redirect(303, `${serverPath(m.id)}?done=mcp-url-revoked`);
  });

  r.get('/mcp-servers/:id/delete', async (req, res) => {
    const m = await servers.get(req.params.id);
    render(ctx, req, res, 'confirm', {
      title: `Delete ${m.name}?`,
      nav: 'mcp',
      message: `Every URL of this MCP server stops working now, and server-side agents can no longer use its endpoint. This cannot be undone.`,
      action: `${serverPath(m.id)}/delete`,
      button: 'Delete the MCP server',
      cancel: serverPath(m.id),
    });
  });

  r.post('/mcp-servers/:id/delete', async (req, res) => {
    await servers.delete(req.params.id);
    res.redirect(303, `${BASE}/mcp-servers?done=mcp-server-deleted`);
  });
}
