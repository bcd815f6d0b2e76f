/**
 * The smallest Microsoft Graph a mail account needs: `GET /v1.0/me/mailboxSettings`, answered only for an access
 * token the fake OAuth server issued and has not expired (Graph's 401 otherwise), with the token's subject, so a
 * test sees whose token the service sent.
 */
import express from 'express';
import type { FakeOAuthServer } from './oauth-server.ts';
import { listen, type Listening } from './listen.ts';

export function startMailboxSettingsApi(oauth: FakeOAuthServer): Promise<Listening> {
  const app = express();
  app.get('/v1.0/me/mailboxSettings', (req, res) => {
    const grant = oauth.validate(req.headers.authorization);
    if (!grant)
      res.status(401).json({
        error: { code: 'InvalidAuthenticationToken', message: 'Access token has expired or is not yet valid.' },
      });
    else res.json({ timeZone: 'UTC', subject: grant.subject });
  });
  return listen(app);
}
