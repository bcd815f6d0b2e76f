/** `npm start`: the service on its configured port, SQLite under ./data unless DATABASE_URL is set. */
import { loadConfig } from './config.ts';
import { startServer } from './server.ts';

const config = loadConfig();
const running = await startServer(config);
const { services } = running;
services.log.info(
  { url: config.publicUrl, listen: `${config.host}:${config.port}`, store: services.store.kind },
  'agent connector service started',
);

if (services.firstCredential) {
  // A generated secret is printed once, on stdout and not through the logger, so a newcomer or a script can pick
  // it up. A secret the operator supplied (INITIAL_CLIENT_SECRET) is never echoed: stdout ends up in log storage.
  const { credential, clientSecret } = services.firstCredential;
  const generated = config.initialClientSecret === undefined;
  process.stdout.write(
    [
      '',
      generated
        ? 'First start: created an API credential. The secret is shown only this once; store it now.'
        : 'First start: created the API credential given by INITIAL_CLIENT_ID and INITIAL_CLIENT_SECRET.',
      `env_url=${config.publicUrl}`,
      `client_id=${credential.clientId}`,
      ...(generated ? [`client_secret=${clientSecret}`] : []),
      '',
    ].join('\n') + '\n',
  );
}

if (services.firstAdminPassword) {
  process.stdout.write(
    [
      '',
      `Dashboard: ${config.publicUrl}/dashboard — sign in as "admin" with the password below (shown only this once;`,
      'set ADMIN_PASSWORD and restart to choose another).',
      `admin_password=${services.firstAdminPassword}`,
      '',
    ].join('\n') + '\n',
  );
}

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    services.log.info({ signal }, 'shutting down');
    void running.close().then(() => process.exit(0));
  });
}
