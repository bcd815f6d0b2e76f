/**
 * The part of the service Express serves: the dashboard (its views and templating loaded on its first request), and
 * the service's 404 for a request no route matches. Loaded by runtime/server.ts with the first such request.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Services } from './services.ts';
import { loadOnFirstUse } from './api/load-on-first-use.ts';
import { errorBody, renderError, sendJson, startRequest } from './api/respond.ts';
import { connectorIcon } from './connectors/icons.ts';

declare module 'express-serve-static-core' {
  interface Request {
    requestId: string;
    credentialId?: string;
  }
}

/**
 * The dashboard (its views and templating loaded on its first request), and the service's 404 for a request no
 * route matches.
 */
export function createApp(s: Services): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  if (s.config.trustProxy) app.set('trust proxy', true);

  app.use((req, res, next) => {
    if (startRequest(req, res)) next();
  });

  const dashboard = () => import('./dashboard/index.ts');
  app.use(
    '/dashboard',
    loadOnFirstUse(async () => (await dashboard()).dashboardRouter(s)),
  );
  app.get(
    '/favicon.ico',
    loadOnFirstUse(async () => (await dashboard()).favicon),
  );

  app.get('/icons/:file', connectorIcon);

  app.use((req, res) => {
    sendJson(res, 404, errorBody(req, 'not_found', `No route ${req.method} ${req.path}`), {
      'x-error-source': 'service',
    });
  });

  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => renderError(s, err, req, res));
  return app;
}
