/**
 * The production runtime (issue 14 point 3, issue 13 point 6): `npm run build` compiles the service to dist/, the
 * compiled service runs with node alone (no tsx) and finds its assets (dashboard views and static files, SQL
 * migrations, the OpenAPI document), SIGTERM sent to that process stops it cleanly, and the key tool runs compiled.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceEnv } from '../helpers/harness.ts';
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
