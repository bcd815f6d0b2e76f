/**
 * The server side of a Scalekit SDK run (test/helpers/scalekit-sdk-scenarios.ts) beside a running harness: the
 * fake desk with the scenarios' tenant, a provider API for the `mail` connection that checks the fake
 * authorization server's tokens, and an OAuth client registered there.
 */
import express from 'express';
import { FakeDesk } from '../fakes/desk.ts';
import { listen } from '../fakes/listen.ts';
import { TEST_CLIENT_ID, TEST_CLIENT_SECRET, type Harness } from './harness.ts';
import { DESK_DOMAIN, DESK_EMAIL, DESK_TOKEN, type ServerSide } from './scalekit-sdk-scenarios.ts';

export interface ScalekitServerSide {
  server: ServerSide;
  close(): Promise<void>;
}

export async function startScalekitServerSide(h: Harness): Promise<ScalekitServerSide> {
  const desk = await new FakeDesk().start();
  desk.addTenant(DESK_DOMAIN, DESK_EMAIL, DESK_TOKEN);
  const app = express();
  app.get('/v1.0/me', (req, res) => {
    const who = h.oauth.validate(req.headers.authorization);
    if (!who) return void res.status(401).json({ error: { code: 'InvalidAuthenticationToken' } });
    res.json({ id: who.subject });
  });
  const api = await listen(app);
  const oauthClient = { clientId: 'client-mail', clientSecret: `secret-mail-${Math.random().toString(36).slice(2)}` };
  h.oauth.addClient({
    client_id: oauthClient.clientId,
    client_secret: oauthClient.clientSecret,
    auth: 'client_secret_post',
  });
  return {
    server: {
      envUrl: h.url,
      clientId: TEST_CLIENT_ID,
      clientSecret: TEST_CLIENT_SECRET,
      deskBaseUrlTemplate: desk.baseUrlTemplate,
      oauth: { authorizeUrl: h.oauth.authorizeUrl, tokenUrl: h.oauth.tokenUrl, ...oauthClient },
      mailApiUrl: api.url,
    },
    async close() {
      await api.close();
      await desk.close();
    },
  };
}
