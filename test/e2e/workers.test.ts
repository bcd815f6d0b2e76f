/**
 * WORKERS (issue 15 point 1): several worker processes on one port, on PostgreSQL. The service runs as its own
 * process with WORKERS=2 on a fresh PostgreSQL schema: it forks two workers, serves concurrent API calls through
 * them, replaces a worker killed with SIGKILL, and on SIGTERM drains every worker and exits 0. Without PostgreSQL,
 * WORKERS=2 refuses to start with one line that says why.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import http from 'node:http';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { PG_URL, serviceEnv, TEST_CLIENT_ID, TEST_CLIENT_SECRET } from '../helpers/harness.ts';
import { spawnService, type ServiceProcess } from '../helpers/service-process.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'acs-workers-'));
const schema = `t_workers_${Date.now().toString(36)}`;
let child: ServiceProcess | undefined;

const workerPids = (primary: number): number[] =>
  execFileSync('ps', ['-o', 'pid=', '--ppid', String(primary)], { encoding: 'utf8' })
    .split('\n')
    .map((l) => Number(l.trim()))
    .filter(Boolean);

/** A GET on a connection of its own (a kept-alive one may be to the worker just killed). */
const statusOf = (url: string) =>
  new Promise<number>((resolve, reject) =>
    http
      .get(url, { agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      })
      .on('error', reject),
  );

/** GET /metrics on a connection of its own. */
const scrape = (url: string) =>
  new Promise<{ status: number; text: string }>((resolve, reject) =>
    http
      .get(`${url}/metrics`, { agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      })
      .on('error', reject),
  );

afterAll(async () => {
  if (child && child.proc.exitCode === null) {
    child.proc.kill('SIGKILL');
    await child.exited;
  }
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('WORKERS', () => {
  it('refuses several workers on SQLite, naming the setting', async () => {
    const proc = spawn(process.execPath, ['--import', 'tsx', 'runtime/main.ts'], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...serviceEnv(dataDir), WORKERS: '2' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((r) => proc.once('exit', r));
    expect(code).toBe(1);
    expect(err.trim()).toBe(
      'agent connector service cannot start: WORKERS is 2: several worker processes need PostgreSQL (set DATABASE_URL), or set WORKERS=1 to use SQLite',
    );
  });

  it('runs two workers on one port on PostgreSQL, replaces a dead one, and drains all on SIGTERM', async () => {
    child = await spawnService({
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...serviceEnv(dataDir),
      DATABASE_URL: PG_URL,
      DATABASE_SCHEMA: schema,
      WORKERS: '2',
    });
    const primary = child.proc.pid!;
    // With PORT=0 the primary picks the port: its first-start lines name the address every worker serves.
    expect(child.output.join('')).toContain(`export ENV_URL=${child.url}\n`);
    while (workerPids(primary).length < 2) await new Promise((r) => setTimeout(r, 50));
    const first = workerPids(primary);
    expect(first).toHaveLength(2);

    const tokenRes = await fetch(`${child.url}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({ client_id: TEST_CLIENT_ID, client_secret: TEST_CLIENT_SECRET }),
    });
    const tokenBody = await tokenRes.text();
    expect(tokenRes.status, tokenBody).toBe(200);
    const { access_token: token } = JSON.parse(tokenBody) as { access_token: string };
    const statuses = await Promise.all(
      Array.from({ length: 100 }, () =>
        fetch(`${child!.url}/v1/tools?connector=helpdesk`, { headers: { authorization: `Bearer ${token}` } }).then(
          async (r) => (r.status === 200 ? (await r.arrayBuffer(), 200) : `${r.status} ${await r.text()}`),
        ),
      ),
    );
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    // Whichever worker takes the scrape, it counts the whole service: the workers' counters are summed.
    for (let i = 0; i < 3; i++) {
      const { status, text } = await scrape(child.url);
      expect(status, text).toBe(200);
      expect(text).toContain('acs_http_requests_total{route="listTools",status="200"} 100');
    }

    process.kill(first[0]!, 'SIGKILL');
    for (;;) {
      const now = workerPids(primary);
      if (now.length === 2 && !now.includes(first[0]!)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    // A scrape while the replacement is still starting sums the worker that serves: it neither waits for the new
    // one nor fails because of it.
    const during = await scrape(child.url);
    expect(during.status, during.text).toBe(200);
    expect(during.text).toContain('acs_http_requests_total{route="listTools",status="200"}');
    // The replacement serves (wait for it to listen: until then the other worker takes every connection).
    for (let i = 0; i < 20; i++) expect(await statusOf(`${child.url}/health`)).toBe(200);

    child.proc.kill('SIGTERM');
    expect(await child.exited).toBe(0);
    expect(child.output.join('')).toContain('all workers stopped');
  });
});
