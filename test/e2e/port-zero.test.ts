/**
 * PORT=0: the service listens on a port the system picks and says which; without PUBLIC_URL its public URL (in
 * authorization links, redirect URIs and the service-token issuer) is the address it got.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../runtime/config.ts';
import { startServer, type RunningServer } from '../../runtime/server.ts';
import { AgentConnectorClient } from '../../packages/client/src/index.ts';
import { serviceEnv, TEST_CLIENT_ID, TEST_CLIENT_SECRET } from '../helpers/harness.ts';

const started: Array<{ running: RunningServer; dataDir: string }> = [];

async function start(env: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'acs-port-'));
  const config = loadConfig({ ...serviceEnv(dataDir), LOG_LEVEL: 'silent', ...env });
  const running = await startServer(config);
  started.push({ running, dataDir });
  return { config, running };
}

afterEach(async () => {
  for (const { running, dataDir } of started.splice(0)) {
    await running.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

describe('PORT=0', () => {
  it('listens on the port the system gave, and derives the public URL from it', async () => {
    const { config, running } = await start();
    expect(config.port).toBeGreaterThan(0);
    expect(config.port).toBe((running.server.address() as { port: number }).port);
    expect(running.url).toBe(`http://127.0.0.1:${config.port}`);
    expect(config.publicUrl).toBe(running.url);
    expect((await fetch(`${config.publicUrl}/health`)).status).toBe(200);

    const client = new AgentConnectorClient({
      clientId: TEST_CLIENT_ID,
      clientSecret: TEST_CLIENT_SECRET,
      envUrl: running.url,
    });
    const connection = await client.createConnection({
      connection_name: 'mail',
      connector: 'mail',
      client_id: 'c',
      client_secret: 's',
    });
    expect(connection.redirect_uri).toBe(`${running.url}/sso/v1/oauth/${connection.id}/callback`);
    const { link } = await client.getAuthorizationLink({ connectionName: 'mail', identifier: 'u' });
    expect(link.startsWith(`${running.url}/sso/v1/oauth/${connection.id}/authorize?link=`)).toBe(true);
  });

  it('keeps a PUBLIC_URL that was given', async () => {
    const { config, running } = await start({ PUBLIC_URL: 'https://connect.example.com/' });
    expect(config.port).toBeGreaterThan(0);
    expect(config.publicUrl).toBe('https://connect.example.com');
    expect((await fetch(`${running.url}/health`)).status).toBe(200);
  });

  it('gives two services two ports', async () => {
    const a = await start();
    const b = await start();
    expect(a.config.port).not.toBe(b.config.port);
  });

  it('still refuses a PUBLIC_URL that is not an http(s) URL', () => {
    expect(() => loadConfig({ PORT: '0', PUBLIC_URL: '/' })).toThrow(/PUBLIC_URL must be an http\(s\) URL/);
    expect(() => loadConfig({ PORT: '0', PUBLIC_URL: 'ftp://x.example' })).toThrow(/PUBLIC_URL/);
  });
});
