/**
 * The first start's generated secrets (issue 37, item 5): the client secret and the dashboard's admin password go to
 * a file under the data directory, mode 0600; stdout (which ends up in log storage) carries only its path. The
 * secrets in the file work: the client secret gets a token, the password signs in.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { spawnService, type ServiceProcess } from '../helpers/service-process.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'acs-first-start-'));
let svc: ServiceProcess | undefined;

afterAll(async () => {
  if (svc) {
    svc.proc.kill('SIGTERM');
    await svc.exited;
  }
  rmSync(dataDir, { recursive: true, force: true });
});

it('writes the generated secrets to a 0600 file and prints only its path', async () => {
  svc = await spawnService({
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
  });
  const path = join(dataDir, 'first-start-secrets.txt');
  // The admin password is appended once its hash is stored, after the start: read until it is there (a count).
  let text = '';
  for (let i = 0; i < 200 && !text.includes('admin_password='); i++) {
    await new Promise((r) => setTimeout(r, 50));
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      /* not written yet */
    }
  }
  expect(statSync(path).mode & 0o777).toBe(0o600);
  const value = (key: string) => new RegExp(`^${key}=(.+)$`, 'm').exec(text)?.[1];
  const clientId = value('client_id')!;
  const clientSecret = value('client_secret')!;
  const password = value('admin_password')!;
  expect(clientSecret).toMatch(/^acs_sk_/);
  expect(password.length).toBeGreaterThan(10);

  const out = svc.output.join('');
  expect(out).toContain(`secrets_file=${path}`);
  expect(out).toContain(`export CLIENT_ID=${clientId}`);
  expect(out).not.toContain(clientSecret);
  expect(out).not.toContain(password);

  const token = await fetch(`${svc.url}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({ client_id: clientId, client_secret: clientSecret }),
  });
  expect(token.status).toBe(200);
  const dash = new DashboardClient(svc.url);
  expect((await dash.signIn(password)).status).toBe(303);
});
