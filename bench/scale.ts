/**
 * The scale bench (issue 35): a service holding N connected accounts against one holding a single account, in one
 * run, on SQLite or PostgreSQL. `npx tsx bench/scale.ts [--accounts N] [--store sqlite|postgres] [--distinct D]`.
 *
 * N accounts are written through the store's bulk path (sealed credentials, the rows an upsert leaves), then the
 * compiled service is started as `npm start` starts it, and measured from outside: CPU per proxied and per tool call
 * (the service process's utime + stime, /proc), RSS after calls spread over D distinct accounts, the event loop's
 * delay (the service's own `nodejs_eventloop_lag_*`, monitorEventLoopDelay, read just before and after) and the
 * p99 of calls on another connection while the connection of N accounts is deleted, page and filter latencies,
 * upserts per second with 32 clients, cold start, a /metrics scrape, store size per account. Times only here.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { encodeCursor } from '../runtime/store/cursor.ts';
import { PostgresStore } from '../runtime/store/postgres.ts';
import { SqliteStore } from '../runtime/store/sqlite.ts';
import type { Store } from '../runtime/store/types.ts';
import { seedAccounts, testKeys, tokenConnection } from '../test/helpers/scale.ts';

const { values: args } = parseArgs({
  options: {
    accounts: { type: 'string', default: '1000000' },
    store: { type: 'string', default: 'sqlite' },
    distinct: { type: 'string', default: '200000' },
  },
});
const N = Number(args.accounts);
const DISTINCT = Math.min(N, Number(args.distinct));
const PG = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const CLIENT_ID = 'acs_scale_bench';
const CLIENT_SECRET = `acs_sk_${randomBytes(16).toString('hex')}`;
const log = (s: string) => process.stderr.write(`${s}\n`);
const ms = (t: number) => `${t.toFixed(1)} ms`;

/** A provider that answers every request at once (the run a tool asks for, anything the proxy sends). */
async function fakeProvider(): Promise<{ server: Server; url: string }> {
  const body = JSON.stringify({ data: { id: 'run1', actId: 'act1', status: 'RUNNING', stats: {} } });
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

interface Service {
  url: string;
  child: ChildProcess;
  token: string;
  startMs: number;
}

async function startService(env: Record<string, string>): Promise<Service> {
  const port = await new Promise<number>((r) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => r(p));
    });
  });
  const url = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (;;) {
    const ok = await fetch(`${url}/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (child.exitCode !== null) throw new Error('the service exited during its start');
    await new Promise((r) => setTimeout(r, 20));
  }
  const startMs = performance.now() - started;
  const res = await fetch(`${url}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT_ID, client_secret: CLIENT_SECRET }),
  });
  const { access_token: token } = (await res.json()) as { access_token: string };
  return { url, child, token, startMs };
}

async function stopService(s: Service): Promise<void> {
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  await exited;
}

const cpuMs = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
};
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

type Call = (i: number) => Promise<number>;
const call =
  (s: Service, what: 'tool' | 'proxy', connection: string, identifier: (i: number) => string): Call =>
  async (i) => {
    const t = performance.now();
    const res =
      what === 'tool'
        ? await fetch(`${s.url}/v1/tools/execute`, {
            method: 'POST',
            headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              tool_name: 'scraper_get_actor_run',
              connection_name: connection,
              identifier: identifier(i),
              tool_input: { runId: 'run1' },
            }),
          })
        : await fetch(`${s.url}/proxy/v2/users/me`, {
            headers: {
              authorization: `Bearer ${s.token}`,
              'x-connection-name': connection,
              'x-identifier': identifier(i),
            },
          });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${what} answered ${res.status}`);
    return performance.now() - t;
  };

/** Runs `count` calls, `concurrency` at a time; returns their latencies. */
async function load(fn: Call, count: number, concurrency = 16): Promise<number[]> {
  const out: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) out.push(await fn(next++));
    }),
  );
  return out;
}

/** Calls `fn` one after another until `until` settles; returns their latencies. */
async function alongside(fn: Call, until: Promise<unknown>): Promise<number[]> {
  let done = false;
  void until.finally(() => (done = true));
  const out: number[] = [];
  for (let i = 0; !done; i++) out.push(await fn(i));
  return out;
}

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)] ?? NaN;

async function cpuPerCall(s: Service, fn: Call, count: number): Promise<number> {
  await load(fn, 500);
  const before = cpuMs(s.child.pid!);
  await load(fn, count);
  return ((cpuMs(s.child.pid!) - before) * 1000) / count;
}

/** The event loop's max and p99 delay in the service since the previous read (prom-client resets it per scrape). */
async function loopDelay(s: Service): Promise<{ max: number; p99: number; scrapeMs: number }> {
  const t = performance.now();
  const text = await (await fetch(`${s.url}/metrics`)).text();
  const scrapeMs = performance.now() - t;
  const read = (name: string) => Number(new RegExp(`^${name} ([\\d.e+-]+)`, 'm').exec(text)?.[1] ?? NaN) * 1000;
  return { max: read('nodejs_eventloop_lag_max_seconds'), p99: read('nodejs_eventloop_lag_p99_seconds'), scrapeMs };
}

async function main(): Promise<void> {
  // Built first, so that a cold start measures the service's start, not the build `npm start` may run before it.
  if (spawnSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' }).status !== 0)
    throw new Error('build failed');
  const kind = args.store === 'postgres' ? 'postgres' : 'sqlite';
  const dir = mkdtempSync(join(tmpdir(), 'acs-scale-bench-'));
  const schemas = [`scale_big_${Date.now().toString(36)}`, `scale_one_${Date.now().toString(36)}`];
  const provider = await fakeProvider();
  const { encryptionKeys, sealer } = testKeys();
  const rows: Array<[string, string, string]> = [];
  const row = (what: string, value: string, target = '') => {
    rows.push([what, value, target]);
    log(`${what}: ${value}${target ? ` (target ${target})` : ''}`);
  };
  const envFor = (i: number): Record<string, string> => ({
    ENCRYPTION_KEYS: encryptionKeys,
    INITIAL_CLIENT_ID: CLIENT_ID,
    INITIAL_CLIENT_SECRET: CLIENT_SECRET,
    DATA_DIR: join(dir, `d${i}`),
    ...(kind === 'postgres' ? { DATABASE_URL: PG, DATABASE_SCHEMA: schemas[i]! } : {}),
  });
  const open = (i: number): Store =>
    kind === 'postgres' ? new PostgresStore(PG, schemas[i]) : new SqliteStore(join(dir, `d${i}`, 'acs.sqlite'));

  // Seed: N accounts on "big", one on "one", each store with a "quiet" connection for the calls alongside.
  const seeded: string[][] = [];
  for (const [i, n] of [N, 1].entries()) {
    const store = open(i);
    await store.migrate();
    const big = tokenConnection('big', provider.url);
    await store.createConnection(big);
    await store.createConnection(tokenConnection('quiet', provider.url));
    const t = performance.now();
    seeded.push(
      await seedAccounts(store, sealer, big.id, n, {
        onBatch: (done) => done % 100_000 === 0 && log(`  seeded ${done}`),
      }),
    );
    if (i === 0)
      row(
        `seeding ${N} accounts (store.insertAccounts, 5,000 a transaction)`,
        `${((performance.now() - t) / 1000).toFixed(1)} s`,
      );
    const q = (await store.listConnections()).find((c) => c.name === 'quiet')!;
    await seedAccounts(store, sealer, q.id, 10, { prefix: 'q-' });
    if (i === 0 && kind === 'sqlite') {
      await store.close();
      const size = statSync(join(dir, 'd0', 'acs.sqlite')).size;
      row('store size per account (SQLite file)', `${(size / N).toFixed(0)} B`);
    } else if (i === 0) {
      const { rows: r } = await (store as PostgresStore).pool.query<{ n: string }>(
        `SELECT pg_total_relation_size('${schemas[0]}.connected_accounts') AS n`,
      );
      row('store size per account (connected_accounts with its indexes)', `${(Number(r[0]!.n) / N).toFixed(0)} B`);
      await store.close();
    } else await store.close();
  }

  const [big, one] = [await startService(envFor(0)), await startService(envFor(1))];
  try {
    row(`cold start with ${N} accounts (spawn to /ready)`, ms(big.startMs), '≤ 1 s');
    row('cold start with 1 account', ms(one.startMs));
    const user = (n: number, spread: number) => (i: number) => `user-${(i * 7919) % Math.min(n, spread)}`;
    for (const what of ['proxy', 'tool'] as const) {
      const a = await cpuPerCall(
        one,
        call(one, what, 'big', () => 'user-0'),
        5_000,
      );
      const b = await cpuPerCall(big, call(big, what, 'big', user(N, 2_000)), 5_000);
      row(
        `${what} CPU per call: ${N} accounts (2,000 warm) / 1 account`,
        `${b.toFixed(0)} / ${a.toFixed(0)} µs = ${(b / a).toFixed(2)}×`,
        '≤ 1.15×',
      );
    }
    const idle = rssMb(big.child.pid!);
    await load(call(big, 'proxy', 'big', user(N, DISTINCT)), DISTINCT, 32);
    row(
      `RSS after proxied calls on ${DISTINCT} distinct accounts − before`,
      `${(rssMb(big.child.pid!) - idle).toFixed(0)} MB`,
      '≤ 64 MB',
    );

    const get = async (path: string) => {
      const t = performance.now();
      const res = await fetch(`${big.url}${path}`, { headers: { authorization: `Bearer ${big.token}` } });
      await res.arrayBuffer();
      return performance.now() - t;
    };
    const best = async (path: string) => Math.min(...(await Promise.all([0, 1, 2, 3, 4].map(() => get(path)))));
    const store = open(0);
    const nearEnd = (await store.getAccount(seeded[0]![N - 101]!))!;
    await store.close();
    row(
      'first page of 100 accounts (request, best of 5)',
      ms(await best('/v1/connected-accounts?connection_name=big&limit=100')),
      '≤ 10 ms',
    );
    row(
      'page of 100 near the end',
      ms(
        await best(
          `/v1/connected-accounts?connection_name=big&limit=100&cursor=${encodeURIComponent(encodeCursor(nearEnd))}`,
        ),
      ),
      '≤ 10 ms',
    );
    row('filter by identifier', ms(await best(`/v1/connected-accounts?identifier=user-${N - 7}`)), '≤ 5 ms');
    row(
      'filter by connection and status',
      ms(await best('/v1/connected-accounts?connection_name=big&status=EXPIRED&limit=100')),
    );
    const scrape = await loopDelay(big);
    row('/metrics scrape', ms(scrape.scrapeMs), '≤ 50 ms');

    const upsert = (i: number) =>
      fetch(`${big.url}/v1/connected-accounts`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${big.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ connection_name: 'quiet', identifier: `up-${i}`, credentials: { token: `t-${i}` } }),
      }).then(
        async (r) => (await r.arrayBuffer(), r.status === 200 ? 0 : Promise.reject(new Error(`upsert ${r.status}`))),
      );
    const t = performance.now();
    await load(upsert, 5_000, 32);
    row(
      'upserts per second (32 clients, new accounts)',
      `${(5_000 / ((performance.now() - t) / 1000)).toFixed(0)}/s`,
      kind === 'sqlite' ? '≥ 2,000/s' : '≥ 1,500/s',
    );

    const quiet = call(big, 'tool', 'quiet', (i) => `q-${i % 10}`);
    const quietP99 = p99(await load(quiet, 2_000, 4));
    await loopDelay(big);
    const d0 = performance.now();
    const res = await fetch(`${big.url}/v1/connections/big`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${big.token}` },
    });
    const answeredMs = performance.now() - d0;
    const { id } = (await res.json()) as { id: string };
    const finished = (async () => {
      for (;;) {
        const r = await fetch(`${big.url}/v1/connection-deletions/${id}`, {
          headers: { authorization: `Bearer ${big.token}` },
        });
        if (((await r.json()) as { status: string }).status === 'done') return performance.now() - d0;
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    const during = await alongside(quiet, finished);
    const loop = await loopDelay(big);
    row(`connection delete with ${N} accounts: answered (HTTP ${res.status})`, ms(answeredMs), '≤ 1 s');
    row('… finished in the background', `${((await finished) / 1000).toFixed(1)} s`, '≤ 5 min');
    row('… event loop delay during it, max / p99', `${ms(loop.max)} / ${ms(loop.p99)}`, 'max ≤ 100 ms');
    row('… p99 of tool calls on another connection during it / quiet', `${ms(p99(during))} / ${ms(quietP99)}`, '≤ 2×');
  } finally {
    await stopService(big);
    await stopService(one);
    provider.server.close();
    if (kind === 'postgres') {
      const admin = new PostgresStore(PG);
      for (const s of schemas) await admin.pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
      await admin.close();
    }
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\n${kind}, ${N} accounts\n\n| measure | figure | target |\n| --- | --- | --- |`);
  for (const [what, value, target] of rows) console.log(`| ${what} | ${value} | ${target} |`);
}

await main();
