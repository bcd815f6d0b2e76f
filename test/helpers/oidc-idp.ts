/**
 * A real OpenID provider for dashboard sign-in tests: `oidc-provider` (a certified OpenID Provider implementation),
 * with a login form of this helper's that checks a password, and accounts whose e-mail, verification and groups the
 * test sets (and changes between sign-ins). Groups are released with the `profile` scope, so the service reads them
 * (and the e-mail) from the provider's userinfo answer, as with many company providers.
 */
import http from 'node:http';
import Provider from 'oidc-provider';

export interface IdpAccount {
  email: string;
  email_verified: boolean;
  groups: string[];
}

export interface TestIdp {
  issuer: string;
  /** Accounts by login name (their `sub`); change them between sign-ins. */
  accounts: Map<string, IdpAccount>;
  /** Every login name that signed in at the form, in order. */
  logins: string[];
  close(): Promise<void>;
}

export const IDP_PASSWORD = 'idp-user-password-correct-horse';

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = '';
    req.on('data', (c: Buffer) => {
      data += c.toString();
      if (data.length > 10_000) reject(new Error('form too large'));
    });
    req.on('end', () => resolve(data));
  });
}

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

export async function startTestIdp(opts: {
  port: number;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
}): Promise<TestIdp> {
  const issuer = `http://127.0.0.1:${opts.port}`;
  const accounts = new Map<string, IdpAccount>();
  const logins: string[] = [];
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: opts.clientId,
        client_secret: opts.clientSecret,
        redirect_uris: [opts.redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['groups'] },
    findAccount: (_ctx, sub) => {
      const a = accounts.get(sub);
      return a ? { accountId: sub, claims: () => ({ sub, ...a }) } : undefined;
    },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    cookies: { keys: ['dashboard-oidc-idp-cookie-key'] },
  });
  const callback = provider.callback();
  const server = http.createServer((req, res) => {
    void (async () => {
      const m = /^\/interaction\/([^/]+)(\/login)?$/.exec(req.url ?? '');
      if (!m) return callback(req, res);
      const details = await provider.interactionDetails(req, res);
      if (m[2] && req.method === 'POST') {
        const form = new URLSearchParams(await readBody(req));
        const login = form.get('login') ?? '';
        if (form.get('password') !== IDP_PASSWORD || !accounts.has(login)) {
          res.writeHead(401, { 'content-type': 'text/html' }).end('<p>Wrong login or password</p>');
          return;
        }
        logins.push(login);
        return provider.interactionFinished(
          req,
          res,
          { login: { accountId: login } },
          { mergeWithLastSubmission: false },
        );
      }
      if (details.prompt.name === 'login') {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(
          `<!doctype html><title>Company sign-in</title><h1>Company sign-in</h1>` +
            `<form method="post" action="/interaction/${escape(details.uid)}/login">` +
            `<label>Login <input name="login" id="idp-login"></label>` +
            `<label>Password <input name="password" id="idp-password" type="password"></label>` +
            `<button type="submit">Continue</button></form>`,
        );
        return;
      }
      // The consent prompt: the company's own application, granted what it asks.
      const grant = new provider.Grant({ accountId: details.session!.accountId, clientId: opts.clientId });
      const missing = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      const grantId = await grant.save();
      return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    })().catch((e: unknown) => {
      res.writeHead(500).end(String(e));
    });
  });
  await new Promise<void>((resolve) => server.listen(opts.port, '127.0.0.1', resolve));
  return {
    issuer,
    accounts,
    logins,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A browser at the provider: follows its redirects with a cookie jar of its own (a fresh one each call, so each
 * sign-in shows the login form), signs in as `login`, and returns the URL it is sent back to at the service.
 */
export async function signInAtIdp(authorizationUrl: string, serviceOrigin: string, login: string): Promise<URL> {
  const jar = new Map<string, string>();
  let url = new URL(authorizationUrl);
  let init: RequestInit = { method: 'GET' };
  for (let hops = 0; hops < 20; hops++) {
    if (url.origin === serviceOrigin) return url;
    const res = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: {
        cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(init.headers as Record<string, string>),
      },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      jar.set(pair!.slice(0, i).trim(), pair!.slice(i + 1));
    }
    const location = res.headers.get('location');
    if (location) {
      url = new URL(location, url);
      init = { method: 'GET' };
      continue;
    }
    const html = await res.text();
    const form = /<form method="post" action="([^"]+\/login)"/.exec(html);
    if (res.status !== 200 || !form)
      throw new Error(`the provider answered ${res.status} at ${url.href}: ${html.slice(0, 300)}`);
    url = new URL(form[1]!, url);
    init = {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ login, password: IDP_PASSWORD }).toString(),
    };
  }
  throw new Error('too many redirects at the provider');
}
