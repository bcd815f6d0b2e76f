/**
 * SIGTERM stops the service even when its stdout reader has gone (a closed pipe, a log shipper that died): the
 * lines it writes while stopping ("draining", "stopped") go nowhere, and it exits anyway (issue 36, item 6).
 * Before runtime/stdout.ts, pino's exit handler retried the write of the last queued line forever.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { spawnService, type ServiceProcess } from '../helpers/service-process.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'acs-sigterm-'));
let service: ServiceProcess | undefined;
afterAll(() => {
  if (service?.proc.exitCode === null && service.proc.signalCode === null) service.proc.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

it('exits 0 on SIGTERM after the reader of its stdout pipe has closed it', async () => {
  service = await spawnService(
    { PATH: process.env.PATH ?? '', PORT: '0', DATA_DIR: dataDir, ADMIN_PASSWORD: 'a-long-admin-password' },
    { stderr: 'collect' },
  );
  // The service has started and printed its first-start lines; it is left to settle, idle: no write in flight, no
  // connection open (the drain then ends at once, its lines still queued for the closed pipe). Then the only reader
  // of its stdout goes away. Closed at once instead, the old code's first failed write came before the signal and
  // the hang did not show; after the pause it showed every time.
  while (!service.output.join('').includes('export CLIENT_SECRET=')) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 500));
  const closed = new Promise((resolve) => service!.proc.stdout!.once('close', resolve));
  service.proc.stdout!.destroy();
  await closed;
  // No request in between: the first line written into the closed pipe is the one the signal causes, so the
  // process exits with it still queued (a write that failed before would have told pino the pipe was gone).
  service.proc.kill('SIGTERM');
  expect(await service.exited).toBe(0);
  expect(service.output.join('')).not.toMatch(/^\s+at /m);
});
