/**
 * Dry-run cost in process: `node --import tsx bench/dry-run.ts <version root>` starts that version's service
 * in this process (its own loadConfig and startServer), prepares it over HTTP like the load runs, then times
 * `services.executor.execute({ dryRun: true })` — validation, account lookup and request planning, no HTTP.
 * Prints one JSON line: for each tool, CPU and wall µs per call.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CLIENT_ID, CLIENT_SECRET, CONNECTION, IDENTIFIER, prepare, serviceToken } from './service.ts';
import { freePort, median } from './system.ts';

interface Executor {
  execute(req: { toolName: string; input: unknown; dryRun: boolean; account: unknown }): Promise<unknown>;
}
interface Started {
  url: string;
  services: { executor: Executor };
  close(): Promise<void>;
}

const root = process.argv[2]!;
const mod = (path: string) => import(pathToFileURL(join(root, path)).href);
const { loadConfig } = (await mod('runtime/config.ts')) as { loadConfig: (env: NodeJS.ProcessEnv) => unknown };
const { startServer } = (await mod('runtime/server.ts')) as { startServer: (config: unknown) => Promise<Started> };

const port = await freePort();
const dataDir = mkdtempSync(join(os.tmpdir(), 'acs-bench-dry-'));
const running = await startServer(
  loadConfig({
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    DATA_DIR: dataDir,
    INITIAL_CLIENT_ID: CLIENT_ID,
    // The fake upstream is on loopback, which a connection may name only when it is listed (issue 37).
    UPSTREAM_ALLOWED_HOSTS: '127.0.0.1',
    INITIAL_CLIENT_SECRET: CLIENT_SECRET,
    LOG_LEVEL: 'warn',
  }),
);
// What a start finishes after it answers (the dashboard admin's password hash, on a pool thread of this process)
// is done before anything is timed: its CPU would count against the first tool measured. (Older versions do it
// before they answer, and have no such promise.)
await (running.services as { firstAdminPassword?: unknown }).firstAdminPassword;
// Nothing is sent in a dry run; the base URL only has to be a valid one.
await prepare(running.url, 'http://127.0.0.1:9', await serviceToken(running.url));

const account = { connectionName: CONNECTION, identifier: IDENTIFIER };
/** µs per call, median of five batches: CPU time of this process (what other work on the machine cannot inflate) and wall time. */
async function measure(toolName: string, input: () => Record<string, unknown>): Promise<{ cpu: number; wall: number }> {
  const run = () => running.services.executor.execute({ toolName, input: input(), dryRun: true, account });
  for (let i = 0; i < 3000; i++) await run();
  const cpu: number[] = [];
  const wall: number[] = [];
  for (let b = 0; b < 5; b++) {
    const n = 5000;
    const c = process.cpuUsage();
    const t = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await run();
    wall.push(Number(process.hrtime.bigint() - t) / 1000 / n);
    const used = process.cpuUsage(c);
    cpu.push((used.user + used.system) / n);
  }
  return { cpu: median(cpu), wall: median(wall) };
}

const result = {
  helpdesk_ticket_get: await measure('helpdesk_ticket_get', () => ({ ticket_id: 123, include: 'users' })),
  helpdesk_ticket_reply: await measure('helpdesk_ticket_reply', () => ({
    ticket_id: 123,
    body: 'Thanks, we are looking into it.',
    public: false,
  })),
};
await running.close();
rmSync(dataDir, { recursive: true, force: true });
console.log(JSON.stringify(result));
process.exit(0);
