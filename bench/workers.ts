/**
 * `npm run bench -- --workers [--rounds N] [--duration S] [--connections C] [--database-url URL]`
 *
 * The service with WORKERS=1 against WORKERS=2 (issue 15: throughput with 2 workers on a 2-core machine), both on
 * PostgreSQL (several workers require it), each on a database of its own created for the run and dropped after.
 * Rounds alternate the two (1, 2 then 2, 1) for the proxy GET and the tool call; every round is listed, the
 * summary is the median, with the ratio 2 workers / 1 worker.
 *
 * Method, and what it cannot do: with two workers the service wants both cores, so nothing can be pinned away from
 * it. The service, wrk (two threads), the fake upstream and PostgreSQL all run on both cores, for both settings
 * alike. The load generator's and the upstream's CPU therefore comes out of the service's share, more so as the
 * service gets faster, and the throughput ratio understates what two workers give on a machine with a separate
 * load generator. What stays meaningful is CPU per request of the service, summed over every process it runs
 * (WORKERS=1: the one process; WORKERS=2: the primary and its workers, read from /proc/<pid>/stat around each wrk
 * run), and the share of the cores that the load side and anything else took, which every round reports.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { checkScenarios, prepare, requests, serviceToken, startService, type Running } from './service.ts';
import {
  childPids,
  coreBusyMicros,
  ensureTools,
  freePort,
  machineDescription,
  median,
  processCpuMicros,
  reapedChildrenCpuMicros,
  sleep,
  startHelper,
  stop,
} from './system.ts';
import { runWrk } from './wrk.ts';

export interface WorkersOptions {
  root: string;
  rounds: number;
  seconds: number;
  warmupSeconds: number;
  connections: number;
  databaseUrl: string;
}

const SETTINGS = [1, 2] as const;
type Scenario = 'proxy' | 'tool';

interface WorkersRound {
  round: number;
  scenario: Scenario;
  workers: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  requests: number;
  /** CPU of the service per request, every process it runs summed, µs. */
  cpuUs: number;
  /** The service's CPU over the run's wall time, % of one core (200 % is both cores). */
  servicePct: number;
  /** wrk's and the fake upstream's CPU, % of one core. */
  loadPct: number;
  /** Everything else busy on the machine meanwhile (PostgreSQL, other programs), % of one core. */
  otherPct: number;
}

interface Service extends Running {
  workers: number;
  token: string;
  database: string;
  /** The pids whose CPU is the service's: the process started, and the workers it forked. */
  pids: number[];
}

const CORES = '0,1';

/** The service's processes: the one started and, with WORKERS > 1, its workers (waited for until all run). */
async function servicePids(s: Running, workers: number): Promise<number[]> {
  if (workers === 1) return [s.pid];
  for (let i = 0; i < 600; i++) {
    const children = childPids(s.pid);
    if (children.length === workers) return [s.pid, ...children];
    await sleep(50);
  }
  throw new Error(`WORKERS=${workers}: the primary (pid ${s.pid}) did not run ${workers} workers within 30 s`);
}

const cpuOf = (pids: number[]) => pids.reduce((sum, pid) => sum + processCpuMicros(pid), 0);
const bothCoresBusy = () => coreBusyMicros(0) + coreBusyMicros(1);

export async function runWorkersBench(o: WorkersOptions): Promise<void> {
  const t0 = performance.now();
  ensureTools();
  if (os.availableParallelism() < 2) throw new Error('the workers comparison needs at least 2 cores');
  const cleanups: Array<() => Promise<void> | void> = [];
  const cleanup = async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void cleanup().then(() => process.exit(130)));
  }
  try {
    const admin = new pg.Client({ connectionString: o.databaseUrl });
    await admin.connect().catch((e: Error) => {
      throw new Error(
        `the workers comparison needs PostgreSQL (WORKERS > 1 requires it); cannot connect to ${redact(o.databaseUrl)}: ${e.message}. ` +
          'Pass --database-url postgres://user@host:port/db (a role that may create databases).',
      );
    });
    cleanups.push(() => admin.end());
    console.error(
      `bench --workers: WORKERS=1 vs WORKERS=2 on PostgreSQL; service, wrk (2 threads), upstream and PostgreSQL all ` +
        `on cores ${CORES}; ${o.rounds} rounds of ${o.seconds} s at ${o.connections} connections; about ` +
        `${Math.ceil((4 * (o.warmupSeconds + o.rounds * (o.seconds + 0.6)) + 30) / 60)} min`,
    );

    const upPort = await freePort();
    const upstreamUrl = `http://127.0.0.1:${upPort}`;
    const upstream = await startHelper(CORES, o.root, 'bench/upstream.ts', [String(upPort)]);
    cleanups.push(() => stop(upstream));

    const services = new Map<number, Service>();
    for (const workers of SETTINGS) {
      const database = `acs_bench_w${workers}_${process.pid}_${Date.now().toString(36)}`;
      await admin.query(`CREATE DATABASE ${database}`);
      cleanups.push(async () => {
        await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      });
      const url = new URL(o.databaseUrl);
      url.pathname = `/${database}`;
      const s = await startService({ label: `WORKERS=${workers}`, root: o.root }, CORES, [], {
        WORKERS: String(workers),
        DATABASE_URL: url.href,
      });
      cleanups.push(() => s.stop());
      const token = await serviceToken(s.url);
      await prepare(s.url, upstreamUrl, token);
      await checkScenarios(s.url, token);
      services.set(workers, { ...s, workers, token, database, pids: await servicePids(s, workers) });
    }

    console.error(`warm-up (${o.warmupSeconds} s each)`);
    for (const s of services.values()) {
      for (const scenario of ['proxy', 'tool'] as const) {
        const r = await runWrk(requests(s.url, s.token)[scenario], {
          core: CORES,
          threads: 2,
          connections: o.connections,
          seconds: o.warmupSeconds,
        });
        if (r.errors) throw new Error(`WORKERS=${s.workers} ${scenario}: ${r.errors} errors in the warm-up`);
      }
    }

    const rounds: WorkersRound[] = [];
    for (let round = 1; round <= o.rounds; round++) {
      for (const s of services.values()) s.token = await serviceToken(s.url);
      for (const scenario of ['proxy', 'tool'] as const) {
        const order = round % 2 ? [...SETTINGS] : [...SETTINGS].reverse();
        for (const workers of order) {
          const s = services.get(workers)!;
          const now = await servicePids(s, workers);
          if (now.join() !== s.pids.join()) {
            throw new Error(`WORKERS=${workers}: a worker was replaced (pids ${s.pids.join()} → ${now.join()})`);
          }
          const wall0 = performance.now();
          const cpu0 = cpuOf(s.pids);
          const busy0 = bothCoresBusy();
          const load0 = processCpuMicros(upstream.pid!) + reapedChildrenCpuMicros();
          const r = await runWrk(requests(s.url, s.token)[scenario], {
            core: CORES,
            threads: 2,
            connections: o.connections,
            seconds: o.seconds,
          });
          const cpu = cpuOf(s.pids) - cpu0;
          const busy = bothCoresBusy() - busy0;
          const load = processCpuMicros(upstream.pid!) + reapedChildrenCpuMicros() - load0;
          const wallUs = (performance.now() - wall0) * 1000;
          const result: WorkersRound = {
            round,
            scenario,
            workers,
            rps: r.rps,
            p50Ms: r.p50Ms,
            p99Ms: r.p99Ms,
            errors: r.errors,
            requests: r.requests,
            cpuUs: cpu / Math.max(1, r.requests),
            servicePct: (cpu / wallUs) * 100,
            loadPct: (load / wallUs) * 100,
            otherPct: Math.max(0, ((busy - cpu - load) / wallUs) * 100),
          };
          rounds.push(result);
          console.error(
            `  round ${round} ${scenario.padEnd(5)} WORKERS=${workers} ${r.rps.toFixed(0).padStart(6)} req/s` +
              `  p99 ${r.p99Ms.toFixed(1).padStart(6)} ms  ${result.cpuUs.toFixed(0).padStart(4)} µs CPU/req` +
              `  service ${result.servicePct.toFixed(0)} %, load ${result.loadPct.toFixed(0)} %, other ` +
              `${result.otherPct.toFixed(0)} % of one core` +
              (r.errors ? `  ${r.errors} ERRORS` : ''),
          );
        }
      }
    }
    await cleanup();

    const report = {
      date: new Date().toISOString(),
      machine: machineDescription(),
      loadavg: os.loadavg(),
      settings: {
        rounds: o.rounds,
        seconds: o.seconds,
        warmupSeconds: o.warmupSeconds,
        connections: o.connections,
        cores: CORES,
        wrkThreads: 2,
      },
      rounds,
      seconds: (performance.now() - t0) / 1000,
    };
    const md = workersMarkdown(report);
    console.log(md);
    const dir = join(o.root, 'bench/results');
    mkdirSync(dir, { recursive: true });
    const stamp = `workers-${report.date.replace(/[:.]/g, '-')}`;
    writeFileSync(join(dir, `${stamp}.json`), JSON.stringify(report, null, 2) + '\n');
    writeFileSync(join(dir, `${stamp}.md`), md);
    console.error(`done in ${report.seconds.toFixed(0)} s; bench/results/${stamp}.json and .md`);
  } finally {
    await cleanup();
  }
}

/** The URL without its password, for an error message. */
function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.href;
  } catch {
    return '(an unreadable URL)';
  }
}

const f0 = (n: number) => n.toFixed(0);
const f1 = (n: number) => n.toFixed(1);
const f2 = (n: number) => n.toFixed(2);

function workersMarkdown(r: {
  date: string;
  machine: string;
  loadavg: number[];
  settings: { rounds: number; seconds: number; connections: number; cores: string };
  rounds: WorkersRound[];
}): string {
  const of = (scenario: Scenario, workers: number) =>
    r.rounds.filter((x) => x.scenario === scenario && x.workers === workers);
  const med = (xs: WorkersRound[], k: keyof WorkersRound) => median(xs.map((x) => x[k] as number));
  const lines = [
    `## WORKERS=1 vs WORKERS=2 (${r.date})`,
    '',
    `${r.machine}; load average at the end ${r.loadavg.map(f2).join(' ')}. PostgreSQL store, ${r.settings.rounds} ` +
      `rounds of ${r.settings.seconds} s at ${r.settings.connections} connections; the service, wrk (2 threads), ` +
      `the fake upstream and PostgreSQL share cores ${r.settings.cores}. Medians of the rounds; ratio = 2 workers / 1.`,
    '',
    '| scenario | req/s, 1 worker | req/s, 2 workers | ratio | CPU µs/req, 1 | CPU µs/req, 2 | ratio | load side, % of a core (1 / 2) | other, % of a core (1 / 2) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const scenario of ['proxy', 'tool'] as const) {
    const one = of(scenario, 1);
    const two = of(scenario, 2);
    lines.push(
      `| ${scenario === 'proxy' ? 'proxy GET' : 'tool call'} | ${f0(med(one, 'rps'))} | ${f0(med(two, 'rps'))} | ` +
        `${f2(med(two, 'rps') / med(one, 'rps'))}× | ${f0(med(one, 'cpuUs'))} | ${f0(med(two, 'cpuUs'))} | ` +
        `${f2(med(two, 'cpuUs') / med(one, 'cpuUs'))}× | ${f0(med(one, 'loadPct'))} / ${f0(med(two, 'loadPct'))} | ` +
        `${f0(med(one, 'otherPct'))} / ${f0(med(two, 'otherPct'))} |`,
    );
  }
  lines.push(
    '',
    'Every round:',
    '',
    '| round | scenario | workers | req/s | p50 ms | p99 ms | errors | CPU µs/req | service % | load side % | other % |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const x of r.rounds) {
    lines.push(
      `| ${x.round} | ${x.scenario} | ${x.workers} | ${f0(x.rps)} | ${f1(x.p50Ms)} | ${f1(x.p99Ms)} | ${x.errors} | ` +
        `${f0(x.cpuUs)} | ${f0(x.servicePct)} | ${f0(x.loadPct)} | ${f0(x.otherPct)} |`,
    );
  }
  return lines.join('\n') + '\n';
}
