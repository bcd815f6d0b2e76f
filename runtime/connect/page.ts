/**
 * The hosted connect page of a connection that takes keys or tokens (API key, bearer, basic, custom fields): the
 * authorization link leads here as it leads an OAuth connection's user to the provider. The form is made from the
 * connector YAML's credential fields (title, description, `help` and `help_url`, secret fields masked); a submission
 * is checked as the API checks credentials, then with the provider (the auth's `verify` request), and only then
 * saved; the provider's refusal shows next to the secret field. Single use (the link is spent by the save), expiring
 * (the link's expiry), protected against cross-site posts (a double-submit token: an HttpOnly SameSite=Strict cookie
 * and the same value in the form, compared in constant time). Plain HTML and CSS, no script (docs/connect.md).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AccountFieldSpec, KeyAuthSpec } from '../../core/spec-model.ts';
import type { ConnectorDefinition, FieldError } from '../../core/tool-types.ts';
import { ServiceError } from '../../core/errors.ts';
import { authFor, authKindsOf, getConnector, isKeyAuth, isOAuth2, validateCredentials } from '../connectors/catalog.ts';
import type { Services } from '../services.ts';
import type { ConnectionAdmin } from '../connection-admin.ts';
import type { Connection, OAuthLink } from '../store/types.ts';
import { resultPage, sendHtml } from '../api/respond.ts';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const esc = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const COOKIE = 'acs_connect';

/**
 * Whether this connection's authorization link leads to the connect page (rather than to a provider): the key auth
 * of a one-kind connection, or `'choice'` for a connection whose users choose between several kinds (issue 38).
 */
export function takesKeys(connection: Connection): KeyAuthSpec | 'choice' | undefined {
  const connector = getConnector(connection.connector);
  if (!connector) return undefined;
  if (authKindsOf(connection).length > 1) return 'choice';
  const auth = authFor(connector, connection.authKind);
  return isKeyAuth(auth) ? auth : undefined;
}

/** The choice of kinds: one submit button per kind in a fieldset, no script (a key kind then shows its fields). */
function choiceHtml(connector: ConnectorDefinition, connection: Connection): string {
  const buttons = authKindsOf(connection).map((kind) => {
    const auth = authFor(connector, kind);
    const what = isKeyAuth(auth)
      ? `Enter your ${auth.title ?? kind} here; it is checked with ${connector.provider} before it is saved.`
      : `Sign in with ${connector.provider} and approve access there.`;
    return `<div class="kind"><button type="submit" name="choose" value="${esc(kind)}" aria-describedby="k-${esc(kind)}">${esc(
      isKeyAuth(auth) ? `Use ${auth.title ?? kind}` : `Continue with ${auth.title ?? kind}`,
    )}</button><p class="hint" id="k-${esc(kind)}">${esc(what)}</p></div>`;
  });
  return `<fieldset><legend>How do you want to connect?</legend>\n${buttons.join('\n')}\n</fieldset>`;
}

interface PageInput {
  connector: ConnectorDefinition;
  /** The key auth whose fields the form asks for; absent: the choice of kinds. */
  auth?: KeyAuthSpec;
  connection: Connection;
  identifier: string;
  link: string;
  csrf: string;
  values?: Record<string, string>;
  errors?: Record<string, string>;
  general?: string;
}

function fieldHtml(f: AccountFieldSpec, value: string | undefined, error: string | undefined): string {
  const id = `f-${f.name}`;
  const described = [f.description || f.help || f.help_url ? `${id}-hint` : '', error ? `${id}-error` : '']
    .filter(Boolean)
    .join(' ');
  const type = f.secret ? 'password' : f.format === 'email' ? 'email' : f.format === 'url' ? 'url' : 'text';
  const required = f.required !== false;
  const autocomplete = f.secret ? 'off' : f.format === 'email' ? 'email' : 'off';
  const hint = [
    f.description ? esc(f.description) : '',
    f.help ? esc(f.help) : '',
    f.help_url ? `<a href="${esc(f.help_url)}" rel="noopener noreferrer" target="_blank">Where to find it</a>` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return `<div class="field${error ? ' invalid' : ''}">
<label for="${id}">${esc(f.title)}${required ? '' : ' <span class="optional">(optional)</span>'}</label>
${hint ? `<p class="hint" id="${id}-hint">${hint}</p>` : ''}
<input id="${id}" name="c_${esc(f.name)}" type="${type}"${required ? ' required aria-required="true"' : ''} autocomplete="${autocomplete}" spellcheck="false"${
    f.example && !f.secret ? ` placeholder="${esc(f.example)}"` : ''
  }${value !== undefined && !f.secret ? ` value="${esc(value)}"` : ''}${described ? ` aria-describedby="${described}"` : ''}${
    error ? ' aria-invalid="true"' : ''
  } maxlength="4096">
${error ? `<p class="error" id="${id}-error">${esc(error)}</p>` : ''}
</div>`;
}

export function connectPage(s: Services, p: PageInput): string {
  const b = s.config.connectBranding;
  const title = `Connect your ${p.connector.title} account`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)} · ${esc(b.productName)}</title>
<style>
*{box-sizing:border-box}body{font:16px/1.5 system-ui,sans-serif;margin:0;color:#1f2933;background:#f5f7fa}
main{max-width:32rem;margin:2rem auto;padding:1.5rem;background:#fff;border:1px solid #d9e2ec;border-radius:8px}
@media (max-width:480px){main{margin:0;border:0;border-radius:0;padding:1rem}}
header{display:flex;align-items:center;gap:.75rem;margin-bottom:1rem}header img{max-height:2.5rem;max-width:8rem}
.product{font-weight:600;color:#3e4c59}h1{font-size:1.35rem;margin:.25rem 0 .5rem}
.field{margin:1rem 0}label{display:block;font-weight:600}.optional{font-weight:400;color:#52606d}
.hint{margin:.2rem 0 .4rem;color:#52606d;font-size:.92rem}.hint a{color:${b.primaryColour}}
input{width:100%;font:inherit;padding:.55rem .65rem;border:1px solid #7b8794;border-radius:6px;min-height:2.75rem}
input:focus{outline:3px solid ${b.primaryColour};outline-offset:1px}
.invalid input{border-color:#b3261e}.error{color:#b3261e;margin:.3rem 0 0;font-weight:600}
.alert{border:1px solid #b3261e;background:#fdecea;color:#8a1c14;padding:.6rem .8rem;border-radius:6px}
button{font:inherit;font-weight:600;color:#fff;background:${b.primaryColour};border:0;border-radius:6px;padding:.7rem 1.2rem;min-height:2.75rem;width:100%;cursor:pointer}
button:focus{outline:3px solid #1f2933;outline-offset:2px}.who{color:#52606d;font-size:.92rem}
fieldset{border:0;padding:0;margin:1rem 0}legend{font-weight:600;margin-bottom:.5rem}.kind{margin:0 0 1rem}
.back{display:inline-block;margin-top:1rem;color:${b.primaryColour}}
</style></head><body><main>
<header>${b.logoUrl ? `<img src="${esc(b.logoUrl)}" alt="${esc(b.productName)}">` : ''}<span class="product">${esc(b.productName)}</span></header>
<h1>${esc(title)}</h1>
<p>${esc(p.connector.description)}</p>
<p class="who">For <strong>${esc(p.identifier)}</strong>. ${esc(b.productName)} stores these credentials encrypted and checks them with ${esc(p.connector.provider)} before saving.</p>
${p.general ? `<p class="alert" role="alert">${esc(p.general)}</p>` : ''}
<form method="post" action="${esc(`${s.config.publicUrl}/sso/v1/oauth/${p.connection.id}/authorize`)}" novalidate>
<input type="hidden" name="link" value="${esc(p.link)}"><input type="hidden" name="csrf" value="${esc(p.csrf)}">
${
  !p.auth
    ? choiceHtml(p.connector, p.connection)
    : `${p.connection.authKinds ? `<input type="hidden" name="auth_kind" value="${esc(p.auth.kind)}">` : ''}
${p.auth.fields.map((f) => fieldHtml(f, p.values?.[f.name], p.errors?.[f.name])).join('\n')}
<button type="submit">Check and connect</button>`
}
</form>${
    p.auth && p.connection.authKinds
      ? `<p><a class="back" href="${esc(`${s.config.publicUrl}/sso/v1/oauth/${p.connection.id}/authorize?link=${encodeURIComponent(p.link)}`)}">Choose another way to connect</a></p>`
      : ''
  }</main></body></html>`;
}

/** The page's own headers: the form posts to this service, the logo may come from its https origin, nothing else. */
function pageHeaders(s: Services, connection?: Connection): Record<string, string> {
  const logo = s.config.connectBranding.logoUrl;
  // The choice of kinds posts here and is redirected to the provider's authorization page: browsers hold the
  // redirect of a form to form-action too, so the provider's origin is allowed on that page.
  const provider = connection && oauthOrigin(connection);
  return {
    'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; img-src data:${logo ? ` ${new URL(logo).origin}` : ''}; form-action ${new URL(s.config.publicUrl).origin}${provider ? ` ${provider}` : ''}; frame-ancestors 'none'; base-uri 'none'`,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  };
}

/** The origin of the OAuth authorization page of a connection whose users choose between kinds (issue 38). */
function oauthOrigin(connection: Connection): string | undefined {
  const connector = connection.authKinds && getConnector(connection.connector);
  if (!connector) return undefined;
  const oauth = connection.authKinds!.map((k) => authFor(connector, k)).find(isOAuth2);
  const url = oauth && (connection.oauth.authorize_url ?? oauth.authorize_url);
  return url ? new URL(url).origin : undefined;
}

function send(
  s: Services,
  res: ServerResponse,
  status: number,
  html: string,
  cookie?: string,
  connection?: Connection,
): void {
  res.writeHead(status, {
    ...pageHeaders(s, connection),
    ...(cookie ? { 'set-cookie': cookie } : {}),
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(html),
  });
  res.end(html);
}

async function openLink(s: Services, connectionId: string, token: string): Promise<OAuthLink> {
  const link = token ? await s.store.getOAuthLink(sha256(token), Date.now()) : undefined;
  if (!link || link.connectionId !== connectionId)
    throw new ServiceError(400, 'invalid_link', 'This connect link is invalid or has expired; ask for a new one');
  if (link.usedAt != null)
    throw new ServiceError(410, 'link_used', 'This link was already used to connect the account; ask for a new one.');
  return link;
}

function cookieOf(req: IncomingMessage): string {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === COOKIE) return v.join('=');
  }
  return '';
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/** GET: the form, with a fresh CSRF token in an HttpOnly SameSite=Strict cookie scoped to this page. */
export async function showConnectPage(
  s: Services,
  res: ServerResponse,
  connection: Connection,
  auth: KeyAuthSpec | 'choice',
  token: string,
): Promise<void> {
  const link = await openLink(s, connection.id, token);
  const identifier = await identifierOfLink(s, link, connection);
  await s.store.markOAuthLinkOpened(link.tokenHash, Date.now());
  const csrf = randomBytes(24).toString('base64url');
  const secure = s.config.publicUrl.startsWith('https:') ? '; Secure' : '';
  const cookie = `${COOKIE}=${csrf}; Path=/sso/v1/oauth/${connection.id}/authorize; HttpOnly; SameSite=Strict${secure}`;
  const connector = getConnector(connection.connector)!;
  const form = auth === 'choice' ? undefined : auth;
  send(
    s,
    res,
    200,
    connectPage(s, { connector, auth: form, connection, identifier, link: token, csrf }),
    cookie,
    connection,
  );
}

/**
 * POST: checks the CSRF token and the link, validates the fields as the API does, asks the provider (the auth's
 * `verify`), then saves the credentials on the link's account (the same account when it reconnects) and spends the
 * link; with the link's `user_verify_url`, they wait for the application to confirm the user, as OAuth's do.
 */
export async function submitConnectPage(
  s: Services,
  m: ConnectionAdmin,
  req: IncomingMessage,
  res: ServerResponse,
  connection: Connection,
  keys: KeyAuthSpec | 'choice',
  body: Record<string, string>,
): Promise<void> {
  const token = body.link ?? '';
  if (!sameSecret(cookieOf(req), body.csrf ?? '')) {
    sendHtml(
      res,
      403,
      resultPage(
        'The form could not be accepted',
        'This form was not sent from the connect page this browser opened (or its cookie expired). Open the link again.',
        false,
      ),
    );
    return;
  }
  const link = await openLink(s, connection.id, token);
  const identifier = await identifierOfLink(s, link, connection);
  const connector = getConnector(connection.connector)!;
  let auth: KeyAuthSpec;
  if (keys === 'choice') {
    // Several kinds: the choice (a `choose` button) or a kind's fields (`auth_kind`), one of the connection's.
    const kind = body.choose ?? body.auth_kind ?? '';
    if (!authKindsOf(connection).includes(kind)) {
      return send(
        s,
        res,
        400,
        connectPage(s, {
          connector,
          connection,
          identifier,
          link: token,
          csrf: body.csrf!,
          general: 'Choose one of the ways to connect below.',
        }),
        undefined,
        connection,
      );
    }
    const chosen = authFor(connector, kind);
    if (!isKeyAuth(chosen)) {
      // OAuth: on to the provider, as the link of an OAuth connection goes (the link is spent by the callback).
      const url = await s.oauth.start(connection.id, token);
      res.writeHead(303, { location: url, 'content-length': 0, 'cache-control': 'no-store' });
      res.end();
      return;
    }
    if (body.choose !== undefined) {
      return send(
        s,
        res,
        200,
        connectPage(s, { connector, auth: chosen, connection, identifier, link: token, csrf: body.csrf! }),
      );
    }
    auth = chosen;
  } else auth = keys;
  const values: Record<string, string> = {};
  for (const f of auth.fields) {
    const v = body[`c_${f.name}`];
    if (typeof v === 'string' && v.trim() !== '') values[f.name] = v.trim();
  }
  const again = (errors: Record<string, string>, general?: string) =>
    send(
      s,
      res,
      400,
      connectPage(s, {
        connector,
        auth,
        connection,
        identifier,
        link: token,
        csrf: body.csrf!,
        values,
        errors,
        general,
      }),
    );
  const checked = validateCredentials(auth, values);
  if ('errors' in checked) {
    return again(byField(checked.errors), 'Some fields need attention.');
  }
  try {
    await m.verifyKeyCredentials(connection, connector, auth, checked.fields, checked.secrets);
  } catch (e) {
    if (!(e instanceof ServiceError)) throw e;
    const secret = auth.fields.find((f) => f.secret) ?? auth.fields[0]!;
    return e.code === 'invalid_credentials'
      ? again({ [secret.name]: `${connector.provider} refused these credentials: ${e.message}` })
      : again({}, e.message);
  }
  // Spent before anything is saved: a second submission of the same link saves nothing.
  if (!(await s.store.consumeOAuthLink(link.tokenHash, Date.now())))
    throw new ServiceError(410, 'link_used', 'This link was already used to connect the account; ask for a new one.');
  // A link made before its account existed (just in time) creates it now, under the id the link reserved.
  const account = (await s.oauth.accountOfLink(link, connection, true))!;
  const done = (to: string | null, ok: string) => {
    if (to) {
      res.writeHead(303, { location: to, 'content-length': 0, 'cache-control': 'no-store' });
      res.end();
    } else sendHtml(res, 200, resultPage('Account connected', ok, true));
  };
  if (link.userVerifyUrl) {
    const waiting = connection.authKinds ? { ...checked.secrets, $auth_kind: auth.kind } : checked.secrets;
    const outcome = await s.oauth.awaitVerification(account, connection, link.userVerifyUrl, waiting, {
      expiresAt: null,
      fields: checked.fields,
    });
    return done(outcome.redirectTo ?? null, outcome.message);
  }
  const saved = await m.storeKeyCredentials(connection, account.identifier, checked.fields, checked.secrets, auth.kind);
  let to: string | null = null;
  if (link.redirectUrl) {
    const u = new URL(link.redirectUrl);
    u.searchParams.set('status', 'success');
    u.searchParams.set('connected_account_id', saved.id);
    u.searchParams.set('identifier', saved.identifier);
    to = u.toString();
  }
  done(to, 'Connected. You can close this window and return to the application.');
}

/** The end user a link is for: its account's identifier, or the identifier of a link made before its account. */
async function identifierOfLink(s: Services, link: OAuthLink, connection: Connection): Promise<string> {
  const account = await s.oauth.accountOfLink(link, connection, false);
  const identifier = account?.identifier ?? link.identifier;
  if (!identifier) throw new ServiceError(400, 'invalid_link', 'The account of this link no longer exists');
  return identifier;
}

function byField(errors: readonly FieldError[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of errors) {
    const name = e.field.replace(/^credentials\./, '');
    out[name] = out[name] ? `${out[name]}; ${e.message}` : `This ${e.message}`.replace(/^This is /, 'This field is ');
  }
  return out;
}
