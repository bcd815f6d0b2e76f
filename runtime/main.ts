/** `npm start`: the service on its configured port, SQLite under ./data unless DATABASE_URL is set. */
import cluster from 'node:cluster';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, type Config } from './config.ts';
import { startServer, type RunningServer } from './server.ts';
import { createServices, type Services } from './services.ts';
import { describeStartupError } from './startup-errors.ts';
import { freePort, runPrimary } from './cluster.ts';
import { tuneGarbageCollector } from './heap.ts';
import { processStdout } from './stdout.ts';

/** stdout for a person at a terminal, in order with the log; a reader that has gone stops nothing (stdout.ts). */
const stdout = processStdout();

tuneGarbageCollector();

function cannotStart(e: unknown): never {
  const line = describeStartupError(e, process.env);
  if (!line) throw e;
  process.stderr.write(`agent connector service cannot start: ${line}\n`);
  process.exit(1);
}

let config: Config;
try {
  config = loadConfig();
} catch (e) {
  cannotStart(e);
}

if (config.workers > 1 && cluster.isPrimary) {
  // PORT=0: the primary picks the port and hands it to the workers, so that each starts as on a configured port,
  // opening it only once it can answer (a worker that opened it to learn its port would answer 503 "starting"
  // to its share of the connections meanwhile), and every worker signs tokens with the same issuer.
  if (config.port === 0) {
    try {
      config.port = await freePort(config.host);
    } catch (e) {
      cannotStart(e);
    }
    process.env.PORT = String(config.port);
    if (!config.publicUrl) {
      config.publicUrl = `${config.tls ? 'https' : 'http'}://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`;
      process.env.PUBLIC_URL = config.publicUrl;
    }
  }
  // The store is prepared once, here, before any worker starts: migrations, keys, the first credential.
  let prepared: Services;
  try {
    prepared = await createServices(config);
  } catch (e) {
    cannotStart(e);
  }
  printFirstStart(prepared, config);
  await printAdminPassword(prepared, config);
  await prepared.close();
  runPrimary(config, prepared.log);
} else {
  await serve(config);
}

async function serve(config: Config): Promise<void> {
  let running: RunningServer;
  try {
    running = await startServer(config);
  } catch (e) {
    cannotStart(e);
  }
  const { services } = running;
  services.log.info(
    { url: config.publicUrl, listen: `${config.host}:${config.port}`, store: services.store.kind },
    'agent connector service started',
  );
  // On every start, for a person at a terminal (the log line above is for machines).
  stdout.write(
    `\nAgent connector service at ${config.publicUrl} (store: ${services.store.kind})\n` +
      `  dashboard: ${config.publicUrl}/dashboard\n  API index: ${config.publicUrl}/  OpenAPI: ${config.publicUrl}/openapi.json\n`,
  );

  printFirstStart(services, config);
  void printAdminPassword(services, config);

  let stopping = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      const graceSeconds = config.shutdownGraceSeconds;
      services.log.info({ signal, graceSeconds }, 'draining: no new connections; in-flight requests may finish');
      void running.drain(graceSeconds * 1000).then(
        ({ cut }) => {
          services.log.info(
            { cut },
            cut ? 'stopped; connections still open after the grace period were cut' : 'stopped',
          );
          process.exit(0);
        },
        (e: unknown) => {
          services.log.error({ err: e }, 'error while stopping');
          process.exit(1);
        },
      );
    });
  }
}

/** A value as one shell word: bare when it is plain, else single-quoted. */
function shellWord(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * Where the first start writes the secrets it generated (the API credential's client secret, the dashboard's admin
 * password): a file under the data directory that only the service's user may read (0600). Only its path is
 * printed: stdout ends up in log storage, and a secret must not.
 */
function firstStartSecretsPath(config: Config): string {
  return join(config.dataDir, 'first-start-secrets.txt');
}

/** Appends `lines` to the secrets file, created 0600 (and made 0600 if it existed with a wider mode). */
function writeSecrets(config: Config, lines: string[]): string {
  const path = firstStartSecretsPath(config);
  mkdirSync(config.dataDir, { recursive: true });
  writeFileSync(path, lines.join('\n') + '\n', { mode: 0o600, flag: 'a' });
  chmodSync(path, 0o600);
  return path;
}

function printFirstStart(services: Services, config: Config): void {
  if (services.firstCredential) {
    // A generated secret goes to a file of mode 0600, never to stdout; a secret the operator supplied
    // (INITIAL_CLIENT_SECRET) is not written anywhere.
    const { credential, clientSecret } = services.firstCredential;
    const generated = config.initialClientSecret === undefined;
    const path = generated
      ? writeSecrets(config, [
          `env_url=${config.publicUrl}`,
          `client_id=${credential.clientId}`,
          `client_secret=${clientSecret}`,
        ])
      : undefined;
    stdout.write(
      [
        '',
        generated
          ? `First start: created an API credential; its client secret is in ${path} (mode 0600, written only this once): store it, then delete the file.`
          : 'First start: created the API credential given by INITIAL_CLIENT_ID and INITIAL_CLIENT_SECRET.',
        // As shell lines the docs' examples take as they are ($ENV_URL, $CLIENT_ID, $CLIENT_SECRET); the secret is
        // read from the file by the line itself, so it never reaches stdout.
        `export ENV_URL=${shellWord(config.publicUrl)}`,
        `export CLIENT_ID=${shellWord(credential.clientId)}`,
        ...(path ? [`export CLIENT_SECRET="$(sed -n 's/^client_secret=//p' ${shellWord(path)})"`] : []),
        '',
      ].join('\n') + '\n',
    );
  }
}

/** Prints the generated admin password once the account holding it is stored (see DashboardAuth.adminReady). */
async function printAdminPassword(services: Services, config: Config): Promise<void> {
  const password = await services.firstAdminPassword.catch(() => undefined);
  if (!password) return;
  const path = writeSecrets(config, [`admin_password=${password}`]);
  stdout.write(
    [
      '',
      `Dashboard: ${config.publicUrl}/dashboard — sign in as "admin" with the password in ${path} (mode 0600, written`,
      'only this once; set ADMIN_PASSWORD and restart to choose another).',
      `secrets_file=${path}`,
      '',
    ].join('\n') + '\n',
  );
}
