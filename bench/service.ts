/**
 * Starting one version of the service (the working tree, or a git ref checked out elsewhere) the way
 * `npm start` does, on one core, and preparing it over its HTTP API only: a service token, a helpdesk
 * connection pointed at the fake upstream, one account. The HTTP API is what stays stable between versions,
 * so the same code can start and drive an older commit.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { freePort, processCpuMicros, sleep, spawnOnCore, stop } from './system.ts';

export interface Version {
  /** "current" for the working tree, else the git ref given to --compare. */
  label: string;
  root: string;
}

export const CLIENT_ID = 'bench_client';
export const CLIENT_SECRET = 'bench_secret_0123456789abcdefghij';
export const CONNECTION = 'helpdesk';
export const IDENTIFIER = 'bench';
export const DESK_DOMAIN = 'acme.zendesk.com';
/** The one upstream request every load scenario causes (the tool's, the proxy's and the baseline's). */
export const TICKET_PATH = '/v2/tickets/123?include=users';
export const TOOL_CALL = {
  tool_name: 'helpdesk_ticket_get',
  connection_name: CONNECTION,
  identifier: IDENTIFIER,
  tool_input: { ticket_id: 123, include: 'users' },
};

/**
 * Node arguments that start the service as the version's `npm start` script does, without the npm, shell and
 * tsx wrapper processes in between, so that the pid measured is the service's own: `tsx <file>` becomes
 * `node --import tsx <file>`; `node <args>` is kept.
 */
export function serviceArgs(root: string): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  const start = pkg.scripts?.start?.trim() ?? '';
  // `npm start` builds dist/ when stale and runs the compiled service in its own process: build here, once, and
  // run what it runs, `node dist/runtime/main.js` (as the README's production command does).
  if (start === 'node scripts/start.mjs') {
    const built = spawnSync(process.execPath, ['scripts/build.mjs'], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    if (built.status !== 0) throw new Error(`${root}: npm run build failed`);
    return ['dist/runtime/main.js'];
  }
  const tsx = /^tsx\s+(.+)$/.exec(start);
  if (tsx) return ['--import', 'tsx', ...tsx[1]!.split(/\s+/)];
  const node = /^node\s+(.+)$/.exec(start);
  if (node) return node[1]!.split(/\s+/);
  throw new Error(`${root}/package.json: cannot read how to start the service from its start script "${start}"`);
}

export interface Running {
  version: Version;
  proc: ChildProcess;
  pid: number;
  url: string;
  /** Spawn to the first successful /health, ms. */
  startMs: number;
  /** CPU the process had used by then (all its threads), ms: what the start costs whatever else the machine runs. */
  startCpuMs: number;
  stop(): Promise<void>;
}

/**
 * Starts `version`'s service on `core` with `nodeFlags` before its script and `env` over the bench's settings.
 * Its standard output (where V8's traces go, e.g. `--trace-gc-nvp`) is appended to `stdoutFile` when one is given.
 * `launcher` is a command that runs node in its own process, such as `['valgrind', '--tool=callgrind']`
 * (a profiler run by hand): the pid is then the launcher's, which must exec or run node in that same process.
 */
export async function startService(
  version: Version,
  core: number | string,
  nodeFlags: string[] = [],
  env: Record<string, string> = {},
  stdoutFile?: string,
  launcher: string[] = [],
): Promise<Running> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(os.tmpdir(), 'acs-bench-data-'));
  const url = `http://127.0.0.1:${port}`;
  // Before the clock starts: for a version started as `npm start` does, this builds dist/ first.
  const args = [...nodeFlags, ...serviceArgs(version.root)];
  const started = performance.now();
  const out = stdoutFile === undefined ? 'ignore' : openSync(stdoutFile, 'a');
  const [command, ...launcherArgs] = [...launcher, process.execPath];
  const proc = spawnOnCore(core, command, [...launcherArgs, ...args], {
    cwd: version.root,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_URL: url,
      DATA_DIR: dataDir,
      INITIAL_CLIENT_ID: CLIENT_ID,
      INITIAL_CLIENT_SECRET: CLIENT_SECRET,
      // The fake upstream is on loopback, which a connection may name only when it is listed (issue 37).
      UPSTREAM_ALLOWED_HOSTS: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', out, 'pipe'],
  });
  // The child has its own copy of the file's descriptor.
  if (typeof out === 'number') closeSync(out);
  let stderr = '';
  proc.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  const stopIt = async () => {
    await stop(proc);
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    for (;;) {
      if (proc.exitCode !== null || proc.signalCode !== null) {
        throw new Error(`the ${version.label} service exited before answering /health: ${stderr}`);
      }
      // Under a launcher such as valgrind, a start takes tens of seconds.
      const limitS = launcher.length ? 600 : 60;
      if (performance.now() - started > limitS * 1000)
        throw new Error(`the ${version.label} service did not start in ${limitS} s`);
      try {
        if ((await fetch(`${url}/health`)).ok) break;
      } catch {
        // not listening yet
      }
      await sleep(5);
    }
  } catch (e) {
    await stopIt();
    throw e;
  }
  const startMs = performance.now() - started;
  const startCpuMs = processCpuMicros(proc.pid!) / 1000;
  return { version, proc, pid: proc.pid!, url, startMs, startCpuMs, stop: stopIt };
}

async function expectOk(what: string, res: Response): Promise<string> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status} ${text.slice(0, 500)}`);
  return text;
}

/** A service token for the bench's API credential (form body; HTTP Basic as a fallback). */
export async function serviceToken(url: string): Promise<string> {
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  let res = await fetch(`${url}/oauth/token`, {
    method: 'POST',
    headers: form,
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT_ID, client_secret: CLIENT_SECRET }),
  });
  if (!res.ok) {
    await res.body?.cancel();
    res = await fetch(`${url}/oauth/token`, {
      method: 'POST',
      headers: { ...form, authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'client_credentials' }),
    });
  }
  const body = JSON.parse(await expectOk('POST /oauth/token', res)) as { access_token?: string };
  if (!body.access_token) throw new Error('POST /oauth/token answered without an access_token');
  return body.access_token;
}

/** The helpdesk connection (base URL on the fake upstream) and one account with an API token. */
export async function prepare(url: string, upstreamUrl: string, token: string): Promise<void> {
  const json = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  await expectOk(
    'POST /v1/connections',
    await fetch(`${url}/v1/connections`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({
        connection_name: CONNECTION,
        connector: 'helpdesk',
        api_base_url: `${upstreamUrl}/desks/{domain}/api`,
      }),
    }),
  );
  await expectOk(
    'PUT /v1/connected-accounts',
    await fetch(`${url}/v1/connected-accounts`, {
      method: 'PUT',
      headers: json,
      body: JSON.stringify({
        connection_name: CONNECTION,
        identifier: IDENTIFIER,
        credentials: { domain: DESK_DOMAIN, email: 'bench@example.com', api_token: 'bench-token-0123456789' },
      }),
    }),
  );
}

/** The load scenarios' requests against one running service. */
export function requests(url: string, token: string) {
  const auth = { authorization: `Bearer ${token}` };
  return {
    proxy: {
      url: `${url}/proxy${TICKET_PATH}`,
      headers: { ...auth, connection_name: CONNECTION, identifier: IDENTIFIER },
    },
    tool: {
      url: `${url}/v1/tools/execute`,
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify(TOOL_CALL),
    },
  };
}

/**
 * A started service made ready for the load scenarios, as every bench script needs it: a service token, the helpdesk
 * connection on `upstreamUrl` with its account, and one request of each scenario checked. Returns their requests.
 */
export async function readyForLoad(url: string, upstreamUrl: string): Promise<ReturnType<typeof requests>> {
  const token = await serviceToken(url);
  await prepare(url, upstreamUrl, token);
  await checkScenarios(url, token);
  return requests(url, token);
}

/** One request of each scenario, checked, so a round never measures a stream of errors. */
export async function checkScenarios(url: string, token: string): Promise<void> {
  const r = requests(url, token);
  const proxied = await expectOk('proxy GET', await fetch(r.proxy.url, { headers: r.proxy.headers }));
  if (!proxied.includes('Benchmark ticket')) throw new Error(`proxy GET answered an unexpected body: ${proxied}`);
  const tool = await expectOk(
    'POST /v1/tools/execute',
    await fetch(r.tool.url, { method: 'POST', headers: r.tool.headers, body: r.tool.body }),
  );
  if (!tool.includes('Benchmark ticket')) throw new Error(`the tool call answered an unexpected body: ${tool}`);
}

/** `<ref>` of the repository at `root`, checked out into a temporary git worktree that uses `root`'s node_modules. */
export function checkout(root: string, ref: string): { version: Version; remove(): void } {
  const git = (...args: string[]) => {
    const r = spawnSync('git', args, { cwd: root, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.trim()}`);
    return r.stdout.trim();
  };
  const commit = git('rev-parse', '--verify', `${ref}^{commit}`);
  const dir = mkdtempSync(join(os.tmpdir(), 'acs-bench-ref-'));
  git('worktree', 'add', '--detach', dir, commit);
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  let removed = false;
  return {
    version: { label: commit.startsWith(ref) ? ref : `${ref} (${commit.slice(0, 7)})`, root: dir },
    remove() {
      if (removed) return;
      removed = true;
      spawnSync('git', ['worktree', 'remove', '--force', dir], { cwd: root });
      rmSync(dir, { recursive: true, force: true });
      spawnSync('git', ['worktree', 'prune'], { cwd: root });
    },
  };
}

/**
 * The versions a bench script measures: the ref given with `--against` (checked out as above) first, if any, then
 * the working tree at `root`. `remove()` takes the ref's worktree away again.
 */
export function versionsAgainst(
  root: string,
  against: string | undefined,
): { versions: Version[]; remove: () => void } {
  const ref = against === undefined ? undefined : checkout(root, against);
  return {
    versions: [...(ref ? [ref.version] : []), { label: 'current', root }],
    remove: () => ref?.remove(),
  };
}
