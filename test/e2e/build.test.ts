/**
 * The production runtime (issue 14 point 3, issue 13 point 6): `npm run build` compiles the service to dist/, the
 * compiled service runs with node alone (no tsx) and finds its assets (dashboard views and static files, SQL
 * migrations, the OpenAPI document), SIGTERM sent to that process stops it cleanly, and the key tool runs compiled.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentConnectorClient } from '../../packages/client/src/index.ts';
import { FakeDesk } from '../fakes/desk.ts';
import { serviceEnv, TEST_CLIENT_ID, TEST_CLIENT_SECRET } from '../helpers/harness.ts';
import { spawnService, type ServiceProcess } from '../helpers/service-process.ts';
// @ts-expect-error: a plain JavaScript module without types (it runs before anything is compiled)
import { staleReason } from '../../scripts/build-lib.mjs';

const run = promisify(execFile);
const dataDir = mkdtempSync(join(tmpdir(), 'acs-build-'));
let service: ServiceProcess | undefined;

beforeAll(async () => {
  await run(process.execPath, ['scripts/build.mjs']);
});

afterAll(() => {
  if (service?.proc.exitCode === null) service.proc.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the compiled service (dist/)', () => {
  it('is up to date right after the build', () => {
    expect((staleReason as () => string | undefined)()).toBeUndefined();
  });

  it('loads got, Express and body-parser only when a request needs them, not at start', () => {
    // The files the start evaluates: dist/runtime/main.js and the chunks it imports statically (not with import()).
    const started = new Set<string>();
    const queue = ['dist/runtime/main.js'];
    for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
      if (started.has(file)) continue;
      started.add(file);
      const code = readFileSync(file, 'utf8');
      for (const m of code.matchAll(/(?:^|[;\n}])\s*import\s*(?:[^'"()]*?from\s*)?["'](\.[^"']+)["']/g)) {
        queue.push(join(dirname(file), m[1]!));
      }
    }
    const atStart = [...started].map((f) => readFileSync(f, 'utf8')).join('\n');
    expect(started.size).toBeGreaterThan(1);
    expect(atStart.includes('node_modules/prom-client/')).toBe(true);
    // The bundle names a CommonJS package's modules by path; got is an ES module, so its CommonJS dependency
    // http2-wrapper stands for it, with got's own method name.
    const lazy = [
      'createNativeRequestOptions',
      'node_modules/http2-wrapper/',
      'node_modules/express/',
      'node_modules/body-parser/',
    ];
    expect(lazy.filter((marker) => atStart.includes(marker))).toEqual([]);
  });

  it('serves the API, the OpenAPI document and the dashboard with its static files from dist/', async () => {
    service = await spawnService(
      { PATH: process.env.PATH, HOME: process.env.HOME, ...serviceEnv(dataDir) },
      { args: ['dist/runtime/main.js'] },
    );
    const get = async (path: string) => {
      const res = await fetch(service!.url + path, { redirect: 'manual' });
      return { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
    };
    const health = await get('/health');
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toMatchObject({ status: 'ok', tools: expect.any(Number) });
    const openapi = await get('/openapi.json');
    expect(openapi.status).toBe(200);
    expect(JSON.parse(openapi.body).openapi).toMatch(/^3\./);
    const css = await get('/dashboard/static/dashboard.css');
    expect(css.status).toBe(200);
    expect(css.type).toContain('text/css');
    const signIn = await get('/dashboard/sign-in');
    expect(signIn.status).toBe(200);
    expect(signIn.body).toContain('<form');
    expect((await get('/favicon.ico')).status).toBe(200);
  });

  it('proxies a request and runs a tool from dist/ (the packages loaded on first use, in their own chunks)', async () => {
    // Each of these loads a chunk the start does not: undici for the proxy, got for the tool. Tests that run the
    // sources cannot see a chunk that exports differently from the package (dist/'s undici once did).
    const desk = await new FakeDesk().start();
    try {
      desk.addTenant('acme.zendesk.com', 'agent@acme.com', 'zd-build-token-5c1a');
      const client = new AgentConnectorClient({
        clientId: TEST_CLIENT_ID,
        clientSecret: TEST_CLIENT_SECRET,
        envUrl: service!.url,
      });
      await client.createConnection({
        connection_name: 'helpdesk',
        connector: 'helpdesk',
        api_base_url: desk.baseUrlTemplate,
      });
      const who = { connectionName: 'helpdesk', identifier: 'user-1' };
      await client.upsertConnectedAccount({
        ...who,
        credentials: { domain: 'acme.zendesk.com', email: 'agent@acme.com', api_token: 'zd-build-token-5c1a' },
      });
      const proxied = await client.request({ ...who, method: 'GET', path: '/v2/tickets' });
      expect(proxied.status).toBe(200);
      const tool = await client.executeTool({ toolName: 'helpdesk_tickets_list', toolInput: { per_page: 1 }, ...who });
      expect(tool.data).toBeDefined();
      expect(desk.requests.map((r) => `${r.method} ${r.domain}`)).toEqual(Array(2).fill('GET acme.zendesk.com'));
    } finally {
      await desk.close();
    }
  });

  it('stops cleanly on SIGTERM sent to the service process', async () => {
    service!.proc.kill('SIGTERM');
    expect(await service!.exited).toBe(0);
  });

  it('runs the key tool compiled', async () => {
    const { stdout } = await run(process.execPath, ['dist/runtime/cli/keys.js', 'list'], {
      env: { PATH: process.env.PATH, DATA_DIR: dataDir },
    });
    expect(stdout).toMatch(/\(active\)/);
  });
});
