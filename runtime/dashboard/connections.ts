/**
 * Connections and their connected accounts. Every change goes through `ConnectionAdmin` (the same code as the
 * HTTP API), after the API's own request schemas (core/api), so the two can never disagree.
 */
import type { Request, Response, Router } from 'express';
import type { AuthSpec } from '../../core/spec-model.ts';
import type { ConnectorDefinition, FieldError } from '../../core/tool-types.ts';
import type { Account, Connection } from '../store/types.ts';
import { ACCOUNT_STATUSES } from '../store/types.ts';
import type { ConnectionInput } from '../connection-admin.ts';
import { authFor, connectors, getConnector, isKeyAuth, isOAuth2, isOAuthKind } from '../connectors/catalog.ts';
import { iconPath } from '../connectors/icons.ts';
import { checkRequest } from '../api/validate.ts';
import { encodeCursor, InvalidCursor } from '../store/cursor.ts';
import { ServiceError } from '../../core/errors.ts';
import { attachErrors, fieldId, type Field } from './fields.ts';
import { firstSentence } from './views.ts';
import {
  BASE,
  connectionPath,
  fieldErrorsOf,
  formList,
  formString,
  queryValue,
  render,
  type DashboardContext,
} from './context.ts';

const PAGE_SIZE = 50;

export function authLabel(a: AuthSpec): string {
  const kind: Record<string, string> = {
    oauth2: 'OAuth 2.0',
    oauth2_mcp: 'OAuth 2.1 with dynamic registration',
    api_key: 'API key',
    bearer: 'Bearer token',
    basic: 'Username and password',
  };
  const name = kind[a.kind] ?? a.kind;
  // A title that already names the mechanism ("OAuth 2.0 (Gong app)", "API token") stands alone.
  if (!a.title || a.title === name) return name;
  return /oauth|key|token|password/i.test(a.title) ? a.title : `${name} · ${a.title}`;
}

/** The API a connector speaks, without the details in parentheses or after a semicolon or comma. */
function shortProvider(provider: string): string {
  return provider.split(/\s*[(;,]/)[0]!.trim();
}

function authKindLabel(connector: ConnectorDefinition | undefined, kind: string): string {
  const a = connector?.auth.find((x) => x.kind === kind);
  return a ? authLabel(a) : kind;
}

function connectorOrThrow(name: string): ConnectorDefinition {
  const c = getConnector(name);
  if (!c) throw new ServiceError(404, 'connector_not_found', `No connector named "${name}"`);
  return c;
}

function field(name: string, label: string, extra: Partial<Field> = {}): Field {
  return { id: fieldId(name), name, label, kind: 'input', type: 'text', ...extra };
}

/** The optional overrides a connection of this auth kind accepts (as the API allows them). */
function overrideFields(connector: ConnectorDefinition, kinds: string[], values: Record<string, string>): Field[] {
  const out: Field[] = [
    field('api_base_url', 'API base URL', {
      value: values.api_base_url ?? '',
      placeholder: connector.api.base_url,
      hint: 'Replaces the connector’s API root (may use account fields such as {domain}), e.g. for a self-hosted provider or a test double.',
      mono: true,
    }),
  ];
  for (const [host, url] of Object.entries(connector.api.hosts ?? {})) {
    const name = `api_hosts.${host}`;
    out.push(field(name, `Host “${host}”`, { value: values[name] ?? '', placeholder: url, mono: true }));
  }
  if (kinds.includes('oauth2')) {
    const auth = connector.auth.find(isOAuth2)!;
    const only = kinds.length > 1 ? ' (OAuth only)' : '';
    out.push(
      field('oauth.authorize_url', `Authorization endpoint${only}`, {
        value: values['oauth.authorize_url'] ?? '',
        placeholder: auth.authorize_url,
        mono: true,
      }),
    );
    out.push(
      field('oauth.token_url', `Token endpoint${only}`, {
        value: values['oauth.token_url'] ?? '',
        placeholder: auth.token_url,
        mono: true,
      }),
    );
  }
  if (kinds.includes('oauth2_mcp')) {
    const auth = connector.auth.find((a) => a.kind === 'oauth2_mcp') as { resource: string };
    out.push(
      field('oauth.resource', 'Protected resource (MCP endpoint)', {
        value: values['oauth.resource'] ?? '',
        placeholder: auth.resource,
        hint: 'Authorization is discovered from here; changing it registers the client again.',
        mono: true,
      }),
    );
  }
  return out;
}

/**
 * The overrides in a submitted form. A field the form did not send keeps the current value (an empty one
 * clears it), so a partial form never wipes what it did not show.
 */
function overridesFromForm(
  connector: ConnectorDefinition,
  body: unknown,
  current?: Connection,
): {
  api_base_url: string | null;
  api_hosts: Record<string, string>;
  oauth: Record<string, string>;
  values: Record<string, string>;
} {
  const values: Record<string, string> = {};
  const sent = (name: string) => typeof (body as Record<string, unknown> | undefined)?.[name] === 'string';
  const read = (name: string, fallback = '') => (values[name] = sent(name) ? formString(body, name).trim() : fallback);
  const apiBase = read('api_base_url', current?.apiBaseUrl ?? '');
  const hosts: Record<string, string> = {};
  for (const host of Object.keys(connector.api.hosts ?? {})) {
    const v = read(`api_hosts.${host}`, current?.apiHosts[host] ?? '');
    if (v) hosts[host] = v;
  }
  const oauth: Record<string, string> = {};
  for (const k of ['authorize_url', 'token_url', 'resource'] as const) {
    const v = read(`oauth.${k}`, current?.oauth[k] ?? '');
    if (v) oauth[k] = v;
  }
  return { api_base_url: apiBase || null, api_hosts: hosts, oauth, values };
}

const sameJson = (a: unknown, b: unknown) =>
  JSON.stringify(a, Object.keys(a ?? {}).sort()) === JSON.stringify(b, Object.keys(b ?? {}).sort());

/** Connection and account errors name API fields (`credentials.domain`); the forms use the same names. */
const errorField = (e: FieldError) =>
  e.field.startsWith('credentials.') ? `cred.${e.field.slice('credentials.'.length)}` : e.field;

export function connectionRoutes(r: Router, ctx: DashboardContext): void {
  const { s, m } = ctx;

  /** GET /connections */
  const listPage = async (req: Request, res: Response) => {
    const list = await s.store.listConnectionsWithCounts();
    render(ctx, req, res, 'connections', {
      title: 'Connections',
      nav: 'connections',
      connections: list.map((c) => {
        const connector = getConnector(c.connector);
        return {
          name: c.name,
          href: connectionPath(c.name),
          connector: c.connector,
          connectorTitle: connector?.title ?? c.connector,
          connectorIcon: iconPath(connector),
          auth: authKindLabel(connector, c.authKind),
          accountCount: c.accountCount,
          incomplete: c.authKind === 'oauth2' && (!c.clientId || !c.clientSecretSealed),
        };
      }),
    });
  };

  /** GET /connections/new */
  const connectorChoicePage = (req: Request, res: Response) => {
    render(ctx, req, res, 'connection-new', {
      title: 'New connection',
      nav: 'connections',
      catalogue: [...connectors.values()]
        .sort((a, b) => a.title.localeCompare(b.title))
        .map((c) => ({
          name: c.name,
          title: c.title,
          // Cards stay even: the full description and provider notes are on the connector's own page.
          summary: firstSentence(c.description),
          provider: shortProvider(c.provider),
          auth: c.auth.map(authLabel).join(' or '),
          toolCount: c.toolNames.length,
          href: `${BASE}/connections/new/${encodeURIComponent(c.name)}`,
        })),
    });
  };

  const createForm = async (
    req: Request,
    res: Response,
    connector: ConnectorDefinition,
    values: Record<string, string>,
    errors: FieldError[] = [],
    status = 200,
  ) => {
    const kinds = connector.auth.map((a) => a.kind);
    const defaultName = (await s.store.getConnectionByName(connector.name)) ? '' : connector.name;
    const fields: Field[] = [
      field('connection_name', 'Connection name', {
        value: values.connection_name ?? defaultName,
        required: true,
        hint: 'Your application selects the connection by this name in every call. Letters, digits, _ . - (up to 64); it cannot change later.',
        autocomplete: 'off',
      }),
    ];
    if (kinds.length > 1) {
      fields.push({
        ...field('auth_kind', 'Authentication'),
        kind: 'select',
        options: connector.auth.map((a) => ({
          value: a.kind,
          label: authLabel(a),
          selected: (values.auth_kind ?? kinds[0]) === a.kind,
        })),
      });
    }
    const advanced = overrideFields(connector, kinds, values);
    const general = attachErrors([...fields, ...advanced], errors, (e) => e.field);
    render(
      ctx,
      req,
      res,
      'connection-create',
      {
        title: `New ${connector.title} connection`,
        nav: 'connections',
        connector: {
          name: connector.name,
          title: connector.title,
          description: connector.description,
          provider: connector.provider,
          docsUrl: connector.docsUrl,
          toolCount: connector.toolNames.length,
          toolsHref: `${BASE}/tools?connector=${encodeURIComponent(connector.name)}`,
          auth: connector.auth.map(authLabel).join(' or '),
        },
        oauth: kinds.includes('oauth2'),
        oauthOptional: kinds.includes('oauth2') && kinds.length > 1,
        mcp: kinds.length === 1 && kinds[0] === 'oauth2_mcp',
        fields,
        advanced,
        advancedOpen: advanced.some((f) => f.value || f.error),
        errors: general,
        action: `${BASE}/connections/new/${encodeURIComponent(connector.name)}`,
      },
      status,
    );
  };

  /** GET /connections/new/:connector */
  const newConnectionPage = async (req: Request<{ connector: string }>, res: Response) => {
    await createForm(req, res, connectorOrThrow(req.params.connector), {});
  };

  /** POST /connections/new/:connector */
  const createConnection = async (req: Request<{ connector: string }>, res: Response) => {
    const connector = connectorOrThrow(req.params.connector);
    const { values, ...overrides } = overridesFromForm(connector, req.body);
    values.connection_name = formString(req.body, 'connection_name').trim();
    const input: ConnectionInput = { connection_name: values.connection_name, connector: connector.name };
    if (connector.auth.length > 1) input.auth_kind = values.auth_kind = formString(req.body, 'auth_kind');
    if (overrides.api_base_url) input.api_base_url = overrides.api_base_url;
    if (Object.keys(overrides.api_hosts).length) input.api_hosts = overrides.api_hosts;
    if (Object.keys(overrides.oauth).length) input.oauth = overrides.oauth;
    let created: Connection;
    try {
      checkRequest('createConnection', 'body', input);
      created = await m.createConnection(input);
    } catch (e) {
      const errors =
        fieldErrorsOf(e) ??
        (e instanceof ServiceError && e.code === 'connection_exists'
          ? [{ field: 'connection_name', message: e.message }]
          : undefined);
      if (!errors) throw e;
      await createForm(req, res, connector, values, errors, e instanceof ServiceError ? e.status : 400);
      return;
    }
    // An OAuth app needs the redirect URI (which contains the new id) before it gives a client id and secret.
    const next =
      created.authKind === 'oauth2'
        ? `${connectionPath(created.name)}/edit?step=2`
        : `${connectionPath(created.name)}?done=connection-created`;
    res.redirect(303, next);
  };

  const editForm = (
    req: Request,
    res: Response,
    c: Connection,
    submitted?: Record<string, string>,
    errors: FieldError[] = [],
    status = 200,
    checkedScopes?: string[],
  ) => {
    const connector = connectorOrThrow(c.connector);
    const auth = authFor(connector, c.authKind);
    const view = m.connectionView(c);
    const values: Record<string, string> = submitted ?? {
      client_id: c.clientId ?? '',
      api_base_url: c.apiBaseUrl ?? '',
      ...Object.fromEntries(Object.entries(c.apiHosts).map(([k, v]) => [`api_hosts.${k}`, v])),
      ...Object.fromEntries(Object.entries(c.oauth).map(([k, v]) => [`oauth.${k}`, v ?? ''])),
    };
    const fields: Field[] = [];
    let scopes: Array<{ name: string; description?: string; checked: boolean; id: string }> = [];
    let scopesExtra: Field | undefined;
    if (isOAuth2(auth)) {
      fields.push(field('client_id', 'Client ID', { value: values.client_id ?? '', autocomplete: 'off', mono: true }));
      fields.push(
        field('client_secret', 'Client secret', {
          type: 'password',
          value: '',
          autocomplete: 'new-password',
          hint: c.clientSecretSealed
            ? 'Set. Leave empty to keep it; the saved value is never shown again.'
            : 'Not set.',
        }),
      );
      const chosen = new Set(checkedScopes ?? c.scopes);
      const available = auth.scopes.available ?? [];
      scopes = available.map((a) => ({
        name: a.name,
        description: a.description,
        checked: chosen.has(a.name),
        id: fieldId(`scope-${a.name}`),
      }));
      const known = new Set(available.map((a) => a.name));
      scopesExtra = field('scopes_extra', available.length ? 'Other scopes' : 'Scopes', {
        value: submitted ? (submitted.scopes_extra ?? '') : c.scopes.filter((x) => !known.has(x)).join(' '),
        hint: `Separated by spaces or commas. The connector’s defaults: ${auth.scopes.default.join(' ') || 'none'}.`,
        mono: true,
      });
    }
    const advanced = overrideFields(connector, [c.authKind], values);
    const all = [...fields, ...(scopesExtra ? [scopesExtra] : []), ...advanced];
    const general = attachErrors(all, errors, (e) => (e.field === 'scopes' ? 'scopes_extra' : e.field));
    render(
      ctx,
      req,
      res,
      'connection-edit',
      {
        title: `Settings of ${c.name}`,
        nav: 'connections',
        step2: queryValue(req, 'step') === '2',
        connection: { ...view, href: connectionPath(c.name), auth: authLabel(auth), connectorTitle: connector.title },
        oauth2: isOAuth2(auth),
        mcp: auth.kind === 'oauth2_mcp',
        redirectUri: view.redirect_uri,
        fields,
        scopes,
        scopesExtra,
        advanced,
        advancedOpen: advanced.some((f) => f.value || f.error),
        errors: general,
        action: `${connectionPath(c.name)}/edit`,
      },
      status,
    );
  };

  /** GET /connections/:name/edit */
  const editPage = async (req: Request<{ name: string }>, res: Response) => {
    editForm(req, res, await s.accounts.connectionByName(req.params.name));
  };

  /** POST /connections/:name/edit */
  const saveConnection = async (req: Request<{ name: string }>, res: Response) => {
    const c = await s.accounts.connectionByName(req.params.name);
    const connector = connectorOrThrow(c.connector);
    const { values, ...overrides } = overridesFromForm(connector, req.body, c);
    const input: ConnectionInput = {};
    let checked: string[] | undefined;
    if (c.authKind === 'oauth2') {
      values.client_id = formString(req.body, 'client_id').trim();
      values.scopes_extra = formString(req.body, 'scopes_extra');
      if (values.client_id !== (c.clientId ?? '')) input.client_id = values.client_id;
      const secret = formString(req.body, 'client_secret');
      if (secret) input.client_secret = secret;
      checked = formList(req.body, 'scopes');
      input.scopes = [...checked, ...values.scopes_extra.split(/[\s,]+/).filter(Boolean)];
    }
    if (overrides.api_base_url !== c.apiBaseUrl) input.api_base_url = overrides.api_base_url;
    if (!sameJson(overrides.api_hosts, c.apiHosts)) input.api_hosts = overrides.api_hosts;
    // Only a real change is sent: for MCP connections a new resource means registering the client again.
    if (!sameJson(overrides.oauth, c.oauth)) input.oauth = overrides.oauth;
    try {
      checkRequest('updateConnection', 'body', input);
      await m.updateConnection(c.name, input);
    } catch (e) {
      const errors = fieldErrorsOf(e);
      if (!errors) throw e;
      editForm(req, res, c, values, errors, 400, checked);
      return;
    }
    res.redirect(303, `${connectionPath(c.name)}?done=connection-saved`);
  };

  /** GET /connections/:name/delete */
  const deletePage = async (req: Request<{ name: string }>, res: Response) => {
    const c = await s.accounts.connectionByName(req.params.name);
    const n = await s.store.countAccounts(c.id);
    render(ctx, req, res, 'confirm', {
      title: `Delete ${c.name}?`,
      nav: 'connections',
      message: `Deleting the connection “${c.name}” also deletes ${n === 1 ? 'its 1 connected account' : `its ${n} connected accounts`} and their stored credentials. Applications using this connection name stop working. This cannot be undone.`,
      action: `${connectionPath(c.name)}/delete`,
      button: n ? `Delete the connection and ${n} account${n === 1 ? '' : 's'}` : 'Delete the connection',
      cancel: connectionPath(c.name),
    });
  };

  /** POST /connections/:name/delete */
  const deleteConnection = async (req: Request<{ name: string }>, res: Response) => {
    await m.deleteConnection(req.params.name);
    res.redirect(303, `${BASE}/connections?done=connection-deleted`);
  };

  const connectionPage = async (
    req: Request,
    res: Response,
    c: Connection,
    linkForm: { identifier?: string; errors?: FieldError[] } = {},
    status = 200,
  ) => {
    const connector = connectorOrThrow(c.connector);
    const auth = authFor(connector, c.authKind);
    const q = queryValue(req, 'q');
    const status_ = m.parseStatus(queryValue(req, 'status'));
    const after = queryValue(req, 'after') || undefined;
    let list: Account[];
    try {
      list = await s.store.listAccounts({
        connectionId: c.id,
        identifierContains: q || undefined,
        status: status_,
        limit: PAGE_SIZE + 1,
        after,
      });
    } catch (e) {
      if (e instanceof InvalidCursor)
        throw new ServiceError(
          400,
          'invalid_input',
          'This page link is not valid any more; start again from the first page.',
        );
      throw e;
    }
    const page = list.slice(0, PAGE_SIZE);
    const filter = new URLSearchParams();
    if (q) filter.set('q', q);
    if (status_) filter.set('status', status_);
    const nextParams = new URLSearchParams(filter);
    if (list.length > PAGE_SIZE) nextParams.set('after', encodeCursor(page[page.length - 1]!));
    const total = await s.store.countAccounts(c.id);
    const identifierField = field('identifier', 'Identifier', {
      value: linkForm.identifier ?? '',
      required: true,
      hint: 'Your application’s id for the end user.',
      autocomplete: 'off',
    });
    const linkErrors = attachErrors([identifierField], linkForm.errors ?? [], (e) => e.field);
    render(
      ctx,
      req,
      res,
      'connection',
      {
        title: c.name,
        nav: 'connections',
        connection: {
          ...m.connectionView(c, total),
          href: connectionPath(c.name),
          auth: authLabel(auth),
          connectorTitle: connector.title,
          incomplete: c.authKind === 'oauth2' && (!c.clientId || !c.clientSecretSealed),
          oauth2: c.authKind === 'oauth2',
          mcp: c.authKind === 'oauth2_mcp',
          oauthEndpoints: Object.entries(c.oauth as Record<string, string | undefined>).map(([k, v]) => ({ k, v })),
          apiHosts: Object.entries(c.apiHosts).map(([k, v]) => ({ k, v })),
        },
        keyAuth: isKeyAuth(auth),
        oauth: isOAuthKind(c.authKind),
        identifierField,
        linkErrors,
        filter: {
          q,
          status: status_ ?? '',
          statuses: ACCOUNT_STATUSES.map((x) => ({ value: x, selected: x === status_ })),
        },
        filtered: !!(q || status_),
        accounts: page.map((a) => ({
          id: a.id,
          identifier: a.identifier,
          status: a.status,
          fields: Object.entries(a.fields).map(([k, v]) => ({ k, v })),
          lastUsedAt: a.lastUsedAt,
          tokenExpiresAt: a.tokenExpiresAt,
          lastError: a.lastError,
          toolHref: `${BASE}/tools?${new URLSearchParams({ connector: c.connector, connection: c.name, identifier: a.identifier })}`,
          deleteHref: `${BASE}/accounts/${encodeURIComponent(a.id)}/delete`,
        })),
        firstPageHref: after ? `${connectionPath(c.name)}${filter.size ? `?${filter}` : ''}` : undefined,
        nextPageHref: list.length > PAGE_SIZE ? `${connectionPath(c.name)}?${nextParams}` : undefined,
        addAccountHref: `${connectionPath(c.name)}/accounts/new`,
        linkAction: `${connectionPath(c.name)}/authorization-link`,
      },
      status,
    );
  };

  /** GET /connections/:name */
  const detailPage = async (req: Request<{ name: string }>, res: Response) => {
    await connectionPage(req, res, await s.accounts.connectionByName(req.params.name));
  };

  /** POST /connections/:name/authorization-link */
  const createAuthorizationLink = async (req: Request<{ name: string }>, res: Response) => {
    const c = await s.accounts.connectionByName(req.params.name);
    const identifier = formString(req.body, 'identifier');
    try {
      checkRequest('createAuthorizationLink', 'body', { connection_name: c.name, identifier });
      const { link, expiresAt, accountId } = await s.oauth.createLink(c, identifier);
      render(ctx, req, res, 'authorization-link', {
        title: 'Authorization link',
        nav: 'connections',
        connection: { name: c.name, href: connectionPath(c.name) },
        identifier,
        link,
        expiresAt,
        accountId,
      });
    } catch (e) {
      if (!(e instanceof ServiceError) || e.status >= 500) throw e;
      const errors = fieldErrorsOf(e) ?? [{ field: 'link', message: e.message }];
      await connectionPage(req, res, c, { identifier, errors }, e.status);
    }
  };

  const accountForm = (
    req: Request,
    res: Response,
    c: Connection,
    values: Record<string, string>,
    errors: FieldError[] = [],
    status = 200,
  ) => {
    const connector = connectorOrThrow(c.connector);
    const auth = authFor(connector, c.authKind);
    if (!isKeyAuth(auth)) {
      throw new ServiceError(
        400,
        'not_key_auth',
        `Connection "${c.name}" uses OAuth: create an authorization link on its page instead.`,
      );
    }
    const fields: Field[] = [
      field('identifier', 'Identifier', {
        value: values.identifier ?? '',
        required: true,
        hint: 'Your application’s id for the end user (unique per connection). Saving an existing identifier replaces its credentials.',
        autocomplete: 'off',
      }),
      ...auth.fields.map((f) =>
        field(`cred.${f.name}`, f.title, {
          // Secret values are never sent back to the browser, not even after a failed save.
          value: f.secret ? '' : (values[`cred.${f.name}`] ?? ''),
          type: f.secret ? 'password' : f.format === 'email' ? 'email' : f.format === 'url' ? 'url' : 'text',
          required: f.required !== false && f.default === undefined,
          hint: [f.description, f.secret ? 'Secret: sealed at rest and never shown again.' : '']
            .filter(Boolean)
            .join(' '),
          placeholder: f.default ?? f.example,
          autocomplete: f.secret ? 'new-password' : 'off',
          mono: f.secret,
        }),
      ),
    ];
    const general = attachErrors(fields, errors, errorField);
    render(
      ctx,
      req,
      res,
      'account-new',
      {
        title: `Add an account to ${c.name}`,
        nav: 'connections',
        connection: {
          name: c.name,
          href: connectionPath(c.name),
          connectorTitle: connector.title,
          auth: authLabel(auth),
        },
        fields,
        verify: auth.verify
          ? { method: auth.verify.method, path: auth.verify.path, checked: values.verify === '1' }
          : undefined,
        errors: general,
        action: `${connectionPath(c.name)}/accounts/new`,
      },
      status,
    );
  };

  /** GET /connections/:name/accounts/new */
  const newAccountPage = async (req: Request<{ name: string }>, res: Response) => {
    accountForm(req, res, await s.accounts.connectionByName(req.params.name), {});
  };

  /** POST /connections/:name/accounts/new */
  const createAccount = async (req: Request<{ name: string }>, res: Response) => {
    const c = await s.accounts.connectionByName(req.params.name);
    const auth = authFor(connectorOrThrow(c.connector), c.authKind);
    const values: Record<string, string> = {
      identifier: formString(req.body, 'identifier'),
      verify: formString(req.body, 'verify'),
    };
    const credentials: Record<string, string> = {};
    if (isKeyAuth(auth)) {
      for (const f of auth.fields) {
        const v = formString(req.body, `cred.${f.name}`);
        values[`cred.${f.name}`] = v;
        if (v !== '') credentials[f.name] = v;
      }
    }
    try {
      checkRequest('upsertConnectedAccount', 'body', {
        connection_name: c.name,
        identifier: values.identifier,
        credentials,
      });
      await m.upsertAccount(c.name, values.identifier!, credentials, values.verify === '1');
    } catch (e) {
      if (!(e instanceof ServiceError) || (e.status >= 500 && e.code !== 'verification_failed')) throw e;
      accountForm(req, res, c, values, fieldErrorsOf(e) ?? [{ field: 'credentials', message: e.message }], e.status);
      return;
    }
    res.redirect(
      303,
      `${connectionPath(c.name)}?${new URLSearchParams({ done: 'account-saved', q: values.identifier! })}`,
    );
  };

  const accountOrThrow = async (id: string) => {
    const a = await s.store.getAccount(id);
    if (!a) throw new ServiceError(404, 'account_not_found', `No connected account with id "${id}"`);
    const c = await s.store.getConnection(a.connectionId);
    if (!c) throw new ServiceError(404, 'connection_not_found', 'The connection of this account no longer exists');
    return { a, c };
  };

  /** GET /accounts/:id/delete */
  const deleteAccountPage = async (req: Request<{ id: string }>, res: Response) => {
    const { a, c } = await accountOrThrow(req.params.id);
    render(ctx, req, res, 'confirm', {
      title: `Delete ${a.identifier}?`,
      nav: 'connections',
      message: `Deleting the connected account “${a.identifier}” of ${c.name} removes its stored credentials. Calls for this identifier fail until it is connected again.`,
      action: `${BASE}/accounts/${encodeURIComponent(a.id)}/delete`,
      button: 'Delete the account',
      cancel: connectionPath(c.name),
    });
  };

  /** POST /accounts/:id/delete */
  const deleteAccount = async (req: Request<{ id: string }>, res: Response) => {
    const { a, c } = await accountOrThrow(req.params.id);
    await m.deleteAccount(a.id);
    res.redirect(303, `${connectionPath(c.name)}?done=account-deleted`);
  };

  // The routes, in the order Express tries them (`/connections/new` before `/connections/:name`).
  r.get('/connections', listPage);
  r.get('/connections/new', connectorChoicePage);
  r.get('/connections/new/:connector', newConnectionPage);
  r.post('/connections/new/:connector', createConnection);
  r.get('/connections/:name/edit', editPage);
  r.post('/connections/:name/edit', saveConnection);
  r.get('/connections/:name/delete', deletePage);
  r.post('/connections/:name/delete', deleteConnection);
  r.get('/connections/:name', detailPage);
  r.post('/connections/:name/authorization-link', createAuthorizationLink);
  r.get('/connections/:name/accounts/new', newAccountPage);
  r.post('/connections/:name/accounts/new', createAccount);
  r.get('/accounts/:id/delete', deleteAccountPage);
  r.post('/accounts/:id/delete', deleteAccount);
}
