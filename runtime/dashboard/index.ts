/**
 * The dashboard, server-rendered under /dashboard: sign-in, connections and their accounts, API
 * credentials, the tool explorer, MCP servers, webhooks and recent activity. Every page but sign-in needs a session; every form
 * carries a CSRF token; pages are never cached and cannot be framed; scripts come only from our own
 * static file (no inline script), and the core flows work without JavaScript.
 */
import { invitationRoutes, userRoutes } from './users.ts';
import { allows, requiredRole } from './roles.ts';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { Services } from '../services.ts';
import { ConnectionAdmin } from '../connection-admin.ts';
import { ProviderError, ServiceError } from '../../core/errors.ts';
import { Views } from './views.ts';
import { ADMIN_USERNAME } from './auth.ts';
import { BASE, errorPage, formString, queryValue, render, session, type DashboardContext } from './context.ts';
import { connectionRoutes } from './connections.ts';
import { credentialRoutes } from './credentials.ts';
import { toolRoutes } from './tools.ts';
import { activityRoutes } from './activity.ts';
import { triggerRoutes } from './triggers.ts';
import { mcpRoutes } from './mcp.ts';
import { webhookRoutes } from './webhooks.ts';
import { auditRoutes } from './audit.ts';
import { DashboardOidc, OIDC_START_PATH, OidcRefusal } from './oidc.ts';

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

function securityHeaders(_req: Request, res: Response, next: NextFunction) {
  res.setHeader('content-security-policy', CSP);
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', 'no-referrer');
  res.setHeader('cross-origin-opener-policy', 'same-origin');
  res.setHeader('permissions-policy', 'camera=(), microphone=(), geolocation=()');
  // Pages carry CSRF tokens and, once, secrets: never stored by the browser or a proxy. Static files override this.
  res.setHeader('cache-control', 'no-store');
  next();
}

const FAVICON = readFileSync(new URL('./static/favicon.ico', import.meta.url));

/**
 * `GET /favicon.ico`, which browsers ask for on every origin whatever the page links (the dashboard links
 * its SVG icon): the same icon as an ICO file, instead of a 404 in every browser's console.
 */
export function favicon(_req: Request, res: Response): void {
  res.setHeader('content-type', 'image/x-icon');
  res.setHeader('cache-control', 'public, max-age=86400');
  res.setHeader('x-content-type-options', 'nosniff');
  res.end(FAVICON);
}

/** Where to go after signing in: only a dashboard path of this service, never another origin. */
export function safeNext(v: string): string {
  const path = v.split('?')[0]!;
  return /^\/dashboard(?:[/?][^\\\s]*)?$/.test(v) && !v.includes('//') && !/(^|\/)(\.|%2e){1,2}(\/|$)/i.test(path)
    ? v
    : `${BASE}/connections`;
}

/**
 * The dashboard's changes, for the audit log: each form a signed-in user posts that changes something, with its
 * action, what it changes, and the form field or path parameter that names the target.
 */
const AUDITED_FORMS: Array<{
  path: RegExp;
  action: string;
  targetType: string;
  target: (m: string[], body: Record<string, unknown>) => string;
}> = [
  {
    path: /^\/connections\/new\/([^/]+)$/,
    action: 'connection.create',
    targetType: 'connection',
    target: (_m, b) => formString(b, 'connection_name'),
  },
  {
    path: /^\/connections\/([^/]+)\/edit$/,
    action: 'connection.update',
    targetType: 'connection',
    target: (m) => m[1]!,
  },
  {
    path: /^\/connections\/([^/]+)\/delete$/,
    action: 'connection.delete',
    targetType: 'connection',
    target: (m) => m[1]!,
  },
  {
    path: /^\/connections\/([^/]+)\/authorization-link$/,
    action: 'link.create',
    targetType: 'connection',
    target: (m) => m[1]!,
  },
  {
    path: /^\/connections\/([^/]+)\/accounts\/new$/,
    action: 'account.upsert',
    targetType: 'connection',
    target: (m) => m[1]!,
  },
  {
    path: /^\/accounts\/([^/]+)\/delete$/,
    action: 'account.delete',
    targetType: 'connected_account',
    target: (m) => m[1]!,
  },
  {
    path: /^\/api-credentials$/,
    action: 'credential.create',
    targetType: 'api_credential',
    target: (_m, b) => formString(b, 'name'),
  },
  {
    path: /^\/api-credentials\/([^/]+)\/revoke$/,
    action: 'credential.revoke',
    targetType: 'api_credential',
    target: (m) => m[1]!,
  },
  {
    path: /^\/mcp-servers$/,
    action: 'mcp_server.create',
    targetType: 'mcp_server',
    target: (_m, b) => formString(b, 'name'),
  },
  { path: /^\/mcp-servers\/([^/]+)\/urls$/, action: 'mcp_url.create', targetType: 'mcp_server', target: (m) => m[1]! },
  {
    path: /^\/mcp-servers\/([^/]+)\/urls\/([^/]+)\/revoke$/,
    action: 'mcp_url.revoke',
    targetType: 'mcp_server',
    target: (m) => m[1]!,
  },
  {
    path: /^\/mcp-servers\/([^/]+)\/delete$/,
    action: 'mcp_server.delete',
    targetType: 'mcp_server',
    target: (m) => m[1]!,
  },
  { path: /^\/webhooks$/, action: 'webhook.create', targetType: 'webhook', target: (_m, b) => formString(b, 'url') },
  {
    path: /^\/webhooks\/([^/]+)\/rotate-secret$/,
    action: 'webhook.rotate_secret',
    targetType: 'webhook',
    target: (m) => m[1]!,
  },
  { path: /^\/webhooks\/([^/]+)\/delete$/, action: 'webhook.delete', targetType: 'webhook', target: (m) => m[1]! },
  {
    path: /^\/users\/invitations$/,
    action: 'dashboard_user.invite',
    targetType: 'dashboard_user',
    target: (_m, b) => formString(b, 'username'),
  },
  {
    path: /^\/users\/invitations\/([^/]+)\/revoke$/,
    action: 'dashboard_user.invitation_revoke',
    targetType: 'dashboard_invitation',
    target: (m) => m[1]!,
  },
  {
    path: /^\/users\/([^/]+)\/role$/,
    action: 'dashboard_user.role',
    targetType: 'dashboard_user',
    target: (m) => m[1]!,
  },
  {
    path: /^\/users\/([^/]+)\/delete$/,
    action: 'dashboard_user.delete',
    targetType: 'dashboard_user',
    target: (m) => m[1]!,
  },
];

/** Form fields whose values the audit log may show; any other field given is recorded as `set` (it may be a secret). */
const SHOWN_FIELDS = new Set([
  'connection_name',
  'connector',
  'auth_kind',
  'api_base_url',
  'client_id',
  'scopes',
  'name',
  'url',
  'events',
  'identifier',
  'mode',
  'expires_in',
  'connection_names',
  'user_verify_url',
  'username',
  'role',
]);

function formChanges(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body ?? {})) {
    if (k === '_csrf' || v === '' || v === undefined) continue;
    out[k] = SHOWN_FIELDS.has(k) ? (typeof v === 'string' ? v.slice(0, 500) : v) : 'set';
  }
  return out;
}

export function dashboardRouter(s: Services): Router {
  const r = express.Router();
  const ctx: DashboardContext = { s, m: new ConnectionAdmin(s), views: new Views() };

  r.use(securityHeaders);
  r.use(
    '/static',
    express.static(fileURLToPath(new URL('./static/', import.meta.url)), {
      index: false,
      maxAge: '10m',
      redirect: false,
    }),
  );
  r.use(express.urlencoded({ extended: false, limit: '256kb', parameterLimit: 2000 }));

  const oidc = s.config.dashboardOidc ? new DashboardOidc(s, s.config.dashboardOidc) : undefined;

  const signInPage = (req: Request, res: Response, status: number, extra: Record<string, unknown>) => {
    const { nonce, setCookie } = s.dashboard.signInNonce(req.headers.cookie);
    if (setCookie) res.append('set-cookie', setCookie);
    const next = typeof extra.next === 'string' ? extra.next : `${BASE}/connections`;
    render(
      ctx,
      req,
      res,
      'sign-in',
      {
        title: 'Sign in',
        csrf: s.dashboard.signInCsrf(nonce),
        username: ADMIN_USERNAME,
        ...(oidc
          ? { oidcName: oidc.settings.displayName, oidcStart: `${OIDC_START_PATH}?next=${encodeURIComponent(next)}` }
          : {}),
        ...extra,
      },
      status,
    );
  };

  // Natural guesses at the sign-in page's address lead to it (and on to the dashboard, not to a 404, after signing in).
  r.get(['/login', '/log-in', '/signin'], (req, res) => {
    const next = queryValue(req, 'next');
    res.redirect(303, `${BASE}/sign-in${next ? `?next=${encodeURIComponent(safeNext(next))}` : ''}`);
  });

  r.get('/sign-in', async (req, res) => {
    if (await s.dashboard.session(req.headers.cookie)) {
      res.redirect(303, safeNext(queryValue(req, 'next')));
      return;
    }
    signInPage(req, res, 200, { next: safeNext(queryValue(req, 'next')) });
  });

  r.post('/sign-in', async (req, res) => {
    const next = safeNext(formString(req.body, 'next'));
    const username = formString(req.body, 'username').trim();
    if (!s.dashboard.checkSignInCsrf(req.headers.cookie, formString(req.body, '_csrf'))) {
      signInPage(req, res, 403, {
        next,
        username,
        error: 'The sign-in form expired or did not come from this page. Please try again.',
      });
      return;
    }
    const result = await s.dashboard.signIn(username, formString(req.body, 'password'), req.ip ?? 'unknown');
    // Every sign-in, success or failure (the name tried is the actor; never the password).
    await s.audit.record(
      {
        actorType: 'dashboard_user',
        actorId: username.slice(0, 200) || '(none)',
        sourceAddress: req.ip ?? null,
        requestId: req.requestId ?? null,
      },
      {
        action: result.ok ? 'dashboard.sign_in' : 'dashboard.sign_in_failed',
        targetType: 'dashboard_user',
        targetId: username.slice(0, 200) || '(none)',
        changes: result.ok
          ? {}
          : { reason: result.retryAfterSeconds ? (result.busy ? 'busy' : 'throttled') : 'wrong_credentials' },
      },
    );
    if (!result.ok) {
      if (result.retryAfterSeconds) {
        res.setHeader('retry-after', String(result.retryAfterSeconds));
        signInPage(req, res, result.busy ? 503 : 429, {
          next,
          username,
          error: result.busy
            ? `Too many sign-ins at once. Try again in ${result.retryAfterSeconds} seconds.`
            : `Too many failed sign-in attempts. Try again in ${result.retryAfterSeconds} seconds.`,
        });
      } else {
        signInPage(req, res, 401, { next, username, error: 'Wrong username or password.' });
      }
      return;
    }
    // A session that was open in this browser is ended: a new sign-in always gets a new session id.
    const previous = await s.dashboard.session(req.headers.cookie);
    if (previous) await s.dashboard.signOut(previous);
    res.append('set-cookie', result.cookie);
    res.append('set-cookie', s.dashboard.clearCookie(s.dashboard.signInCookie));
    res.redirect(303, next);
  });

  if (oidc) oidcRoutes(r, ctx, oidc);

  invitationRoutes(r, ctx);

  r.use(async (req, res, next) => {
    const current = await s.dashboard.session(req.headers.cookie);
    if (!current) {
      const back = req.method === 'GET' ? `?next=${encodeURIComponent(safeNext(req.originalUrl))}` : '';
      res.redirect(303, `${BASE}/sign-in${back}`);
      return;
    }
    res.locals.session = current;
    next();
  });

  // Roles (runtime/dashboard/roles.ts): checked on every route, with the role read from the store at this request.
  r.use((req, res, next) => {
    const current = session(res)!;
    const needed = requiredRole(req.method === 'HEAD' ? 'GET' : req.method, req.path);
    if (allows(current.role, needed)) return next();
    errorPage(
      ctx,
      req,
      res,
      403,
      'Not allowed',
      `Your role (${current.role}) does not allow this: it needs ${needed === 'admin' ? 'an admin' : `an ${needed}`}. Ask an admin of the dashboard if you need it.`,
    );
  });

  r.use((req, res, next) => {
    if (req.method !== 'POST') return next();
    if (!s.dashboard.checkCsrf(session(res)!, formString(req.body, '_csrf'))) {
      errorPage(
        ctx,
        req,
        res,
        403,
        'Form refused',
        'This form’s security token is missing or wrong, so nothing was changed. Go back, reload the page and try again.',
      );
      return;
    }
    next();
  });

  // Each change a signed-in user makes through a form is recorded once it succeeded (the page answered below 400).
  r.use((req, res, next) => {
    if (req.method !== 'POST') return next();
    let match: RegExpExecArray | null = null;
    const form = AUDITED_FORMS.find((f) => (match = f.path.exec(req.path)) !== null);
    if (!form || !match) return next();
    const m = match as RegExpExecArray;
    const body = (req.body ?? {}) as Record<string, unknown>;
    res.on('finish', () => {
      if (res.statusCode >= 400) return;
      void s.audit
        .record(
          {
            actorType: 'dashboard_user',
            actorId: session(res)!.username,
            sourceAddress: req.ip ?? null,
            requestId: req.requestId ?? null,
          },
          {
            action: form.action,
            targetType: form.targetType,
            targetId: safeDecode(form.target([...m], body)).slice(0, 500),
            changes: formChanges(body),
          },
        )
        .catch(() => {});
    });
    next();
  });

  r.post('/sign-out', async (_req, res) => {
    await s.dashboard.signOut(session(res)!);
    res.append('set-cookie', s.dashboard.clearCookie(s.dashboard.sessionCookie));
    res.redirect(303, `${BASE}/sign-in?done=signed-out`);
  });

  r.get('/', (_req, res) => res.redirect(303, `${BASE}/connections`));
  connectionRoutes(r, ctx);
  credentialRoutes(r, ctx);
  toolRoutes(r, ctx);
  activityRoutes(r, ctx);
  triggerRoutes(r, ctx);
  mcpRoutes(r, ctx);
  webhookRoutes(r, ctx);
  auditRoutes(r, ctx);
  userRoutes(r, ctx);

  r.use((req, res) => errorPage(ctx, req, res, 404, 'Not found', 'There is no dashboard page here.'));

  r.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (err instanceof ServiceError) {
      errorPage(ctx, req, res, err.status, err.status === 404 ? 'Not found' : 'Something is not right', err.message);
      return;
    }
    if (err instanceof ProviderError) {
      errorPage(ctx, req, res, 502, 'The provider refused', `The provider answered HTTP ${err.status}.`);
      return;
    }
    const e = err as { type?: string; status?: number };
    if (e?.type === 'entity.too.large') {
      errorPage(ctx, req, res, 413, 'Too large', 'The form was larger than the dashboard accepts.');
      return;
    }
    if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) {
      errorPage(ctx, req, res, e.status, 'Bad request', 'The request could not be read.');
      return;
    }
    s.log.error({ requestId: req.requestId, err: (err as Error)?.stack ?? String(err) }, 'dashboard error');
    errorPage(ctx, req, res, 500, 'Internal error', `Something went wrong; quote request id ${req.requestId}.`);
  });
  return r;
}

/**
 * Sign-in through the company's OpenID provider (runtime/dashboard/oidc.ts): `GET /oidc/start` sends the browser to
 * the provider with a signed state cookie; `GET /oidc/callback` completes it. Every outcome is in the audit log, as
 * for password sign-ins; the session is opened the same way.
 */
function oidcRoutes(r: Router, ctx: DashboardContext, oidc: DashboardOidc): void {
  const { s } = ctx;
  const record = (req: Request, actor: string, ok: boolean, changes: Record<string, unknown>) =>
    s.audit.record(
      {
        actorType: 'dashboard_user',
        actorId: actor.slice(0, 200) || '(none)',
        sourceAddress: req.ip ?? null,
        requestId: req.requestId ?? null,
      },
      {
        action: ok ? 'dashboard.sign_in' : 'dashboard.sign_in_failed',
        targetType: 'dashboard_user',
        targetId: actor.slice(0, 200) || '(none)',
        changes: { method: 'oidc', ...changes },
      },
    );

  r.get('/oidc/start', async (req, res) => {
    try {
      const started = await oidc.start(safeNext(queryValue(req, 'next')));
      res.append('set-cookie', started.setCookie);
      res.redirect(303, started.url);
    } catch (e) {
      if (!(e instanceof OidcRefusal)) throw e;
      await record(req, e.actor, false, { reason: e.reason });
      errorPage(ctx, req, res, e.status, 'Sign-in not possible', e.message);
    }
  });

  r.get('/oidc/callback', async (req, res) => {
    // Bounded before it is read: a callback carries code, state, iss (or error, error_description) and little else.
    const query = req.originalUrl.slice(req.originalUrl.indexOf('?') + 1);
    const params = new URLSearchParams(req.originalUrl.includes('?') && query.length <= 8192 ? query : '');
    res.append('set-cookie', s.dashboard.clearCookie(oidc.stateCookie));
    const pending = oidc.pending(req.headers.cookie);
    try {
      if (!pending)
        throw new OidcRefusal(
          'no_pending_sign_in',
          'This sign-in was not started in this browser, or took longer than 10 minutes. Go back to the sign-in page and start again.',
          '(unknown)',
          400,
        );
      const done = await oidc.finish(params, pending);
      await record(req, done.user.username, true, {
        role: done.user.role,
        ...(done.created ? { user_created: true } : {}),
        ...(done.previousRole ? { previous_role: done.previousRole } : {}),
      });
      // As for a password sign-in: a session open in this browser is ended, a new one gets a new id.
      const previous = await s.dashboard.session(req.headers.cookie);
      if (previous) await s.dashboard.signOut(previous);
      res.append('set-cookie', await s.dashboard.openSession(done.user.id));
      res.redirect(303, safeNext(pending.next));
    } catch (e) {
      if (!(e instanceof OidcRefusal)) throw e;
      await record(req, e.actor, false, { reason: e.reason });
      errorPage(ctx, req, res, e.status, 'Sign-in refused', e.message);
    }
  });
}

function safeDecode(v: string): string {
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
}
