/**
 * `npm run bench [-- --compare <git-ref>] [--rounds N] [--duration S] [--connections C]`
 * `npm run bench -- --workers [--database-url URL] [--rounds N] [--duration S] [--connections C]`: WORKERS=1
 * against WORKERS=2 on PostgreSQL instead (bench/workers.ts, which says how that one is measured).
 *
 * The service against the least a Node pass-through can be (bench/baseline.ts), on loopback, with wrk. The
 * process under test (the baseline or a service) runs alone on one core; wrk, the fake upstream and this
 * script share the other, so the load generator never takes CPU from what is measured. CPU per request is
 * read from /proc/<pid>/stat of the process under test around each wrk run. Rounds alternate the scenarios
 * (baseline, proxy, tool, baseline, …); the summary is the median of the rounds, every round is listed.
 * With --compare, <git-ref> is checked out into a temporary git worktree and its service is measured in the
 * same rounds as the working tree's, both started the same way.
 *
 * Prints Markdown to stdout; writes the raw figures as JSON under bench/results/. Not a test: nothing here
 * asserts a time.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { markdown, type Report, type RoundResult, type Transfer } from './report.ts';
import {
  checkout,
  checkScenarios,
  DESK_DOMAIN,
  prepare,
  requests,
  serviceToken,
  startService,
  TICKET_PATH,
  type Running,
  type Version,
} from './service.ts';
import {
  coreBusyMicros,
  ensureTools,
  freePort,
  machineDescription,
  median,
  peakRssMb,
  pinSelf,
  processCpuMicros,
  reapedChildrenCpuMicros,
  resetPeakRss,
  rssMb,
  sleep,
  spawnOnCore,
  startHelper,
  stop,
} from './system.ts';
import { runWrk, type WrkRequest } from './wrk.ts';
import { runWorkersBench } from './workers.ts';

const ROOT = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
const { values: opt } = parseArgs({
  options: {
    compare: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '32' },
    starts: { type: 'string', default: '5' },
    'stream-mb': { type: 'string', default: '200' },
    'stream-runs': { type: 'string', default: '3' },
    'load-core': { type: 'string', default: '0' },
    'test-core': { type: 'string', default: '1' },
    workers: { type: 'boolean', default: false },
    'database-url': {
      type: 'string',
      default: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    },
  },
});
const wholeNumber = (name: keyof typeof opt, min = 1) => {
  const n = Number(opt[name]);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be a whole number ≥ ${min}, got "${opt[name]}"`);
  return n;
};
const ROUNDS = wholeNumber('rounds', 3);
const SECONDS = wholeNumber('duration');
const WARMUP = wholeNumber('warmup');
const CONNECTIONS = wholeNumber('connections');
const STARTS = wholeNumber('starts');
const STREAM_BYTES = wholeNumber('stream-mb') * 1024 * 1024;
const STREAM_RUNS = wholeNumber('stream-runs');
const LOAD_CORE = wholeNumber('load-core', 0);
const TEST_CORE = wholeNumber('test-core', 0);

/** Something measured under load: the baseline, or one version's proxy or tool scenario. */
interface Target {
  key: string;
  scenario: 'baseline' | 'proxy' | 'tool';
  pid: () => number;
  request: () => WrkRequest;
}

async function measure(t: Target, round: number): Promise<RoundResult> {
  const pid = t.pid();
  const req = t.request();
  const wall0 = performance.now();
  const cpu0 = processCpuMicros(pid);
  const core0 = coreBusyMicros(TEST_CORE);
  const up0 = processCpuMicros(upstream.pid!);
  const wrk0 = reapedChildrenCpuMicros();
  const r = await runWrk(req, { core: LOAD_CORE, connections: CONNECTIONS, seconds: SECONDS });
  const cpu = processCpuMicros(pid) - cpu0;
  const core = coreBusyMicros(TEST_CORE) - core0;
  const load = processCpuMicros(upstream.pid!) - up0 + (reapedChildrenCpuMicros() - wrk0);
  const wallUs = (performance.now() - wall0) * 1000;
  return {
    round,
    key: t.key,
    rps: r.rps,
    p50Ms: r.p50Ms,
    p99Ms: r.p99Ms,
    errors: r.errors,
    requests: r.requests,
    cpuUs: cpu / Math.max(1, r.requests),
    busyPct: (cpu / wallUs) * 100,
    otherOnTestCorePct: Math.max(0, ((core - cpu) / wallUs) * 100),
    loadCorePct: (load / wallUs) * 100,
  };
}

/**
 * One download or upload through the process under test, driven by curl on the load core (a native client,
 * like wrk), with the peak RSS growth and CPU of the process under test. Uploads read a sparse file.
 */
async function transfer(
  kind: 'download' | 'upload',
  url: string,
  headers: Record<string, string>,
  pid: number,
  uploadFile: string,
): Promise<Transfer> {
  const args = [
    '-sS',
    '--no-buffer',
    '-H',
    'Expect:',
    '-w',
    '\n%{http_code} %{size_download} %{size_upload} %{time_total}',
  ];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  if (kind === 'upload') args.push('-X', 'POST', '-H', 'content-type: application/octet-stream', '-T', uploadFile);
  else args.push('-o', '/dev/null');
  resetPeakRss(pid);
  const rss0 = rssMb(pid);
  const cpu0 = processCpuMicros(pid);
  const curl = spawnOnCore(LOAD_CORE, 'curl', [...args, url], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  curl.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  curl.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise<number | null>((r) => curl.once('close', r));
  const cpu = processCpuMicros(pid) - cpu0;
  const rssGrowthMb = peakRssMb(pid) - rss0;
  const lines = out.trim().split('\n');
  const [status, down, up, seconds] = lines.pop()!.split(' ').map(Number) as [number, number, number, number];
  const moved = kind === 'download' ? down : (JSON.parse(lines.join('\n')) as { received?: number }).received;
  if (code !== 0 || status !== 200 || moved !== STREAM_BYTES || (kind === 'upload' && up !== STREAM_BYTES)) {
    throw new Error(`${kind} through ${url}: curl exit ${code}, HTTP ${status}, ${moved} bytes moved; ${err}${out}`);
  }
  const mb = STREAM_BYTES / 1024 / 1024;
  return { mbps: mb / seconds, rssGrowthMb, cpuUsPerMb: cpu / mb };
}

let upstream: ChildProcess;
const cleanups: Array<() => Promise<void> | void> = [];
async function cleanup() {
  for (const c of cleanups.splice(0).reverse()) await c();
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void cleanup().then(() => process.exit(130)));
}

async function main() {
  const t0 = performance.now();
  ensureTools();
  const cores = os.availableParallelism();
  if (LOAD_CORE === TEST_CORE || Math.max(LOAD_CORE, TEST_CORE) >= cores) {
    throw new Error(`--load-core and --test-core must be two different cores of the ${cores} here`);
  }
  pinSelf(LOAD_CORE);

  const current: Version = { label: 'current', root: ROOT };
  const versions: Version[] = [];
  if (opt.compare) {
    const ref = checkout(ROOT, opt.compare);
    cleanups.push(() => ref.remove());
    versions.push(ref.version);
  }
  versions.push(current);
  const estimate =
    versions.length * STARTS * 3.5 +
    (1 + 2 * versions.length) * (WARMUP + ROUNDS * (SECONDS + 0.6)) +
    (STREAM_RUNS + 1) * 2 * (1 + versions.length) * 1.5 +
    versions.length * 50;
  console.error(
    `bench: ${versions.map((v) => v.label).join(' vs ')}; wrk and the fake upstream on core ${LOAD_CORE}, ` +
      `the process under test on core ${TEST_CORE}; ${ROUNDS} rounds of ${SECONDS} s at ${CONNECTIONS} connections; ` +
      `about ${Math.ceil(estimate / 60)} min`,
  );

  const upPort = await freePort();
  const basePort = await freePort();
  const upstreamUrl = `http://127.0.0.1:${upPort}`;
  upstream = await startHelper(LOAD_CORE, ROOT, 'bench/upstream.ts', [String(upPort)]);
  cleanups.push(() => stop(upstream));
  const baseline = await startHelper(TEST_CORE, ROOT, 'bench/baseline.ts', [String(basePort), upstreamUrl]);
  cleanups.push(() => stop(baseline));

  // Alternating with rounds: a version never gets all the quiet or all the busy moments.
  const inRound = <T>(xs: T[], round: number) => (round % 2 ? [...xs].reverse() : xs);

  console.error('cold start to first /health');
  const coldStarts = new Map<string, Array<{ ms: number; cpuMs: number }>>(versions.map((v) => [v.label, []]));
  const restarts = new Map<string, Array<{ ms: number; cpuMs: number }>>(versions.map((v) => [v.label, []]));
  for (let i = 0; i < STARTS; i++) {
    for (const v of inRound(versions, i)) {
      // A first start (empty data directory: it creates the store, keys and first credential), then a restart
      // on what it left, as after a deployment or a crash.
      const dataDir = mkdtempSync(join(os.tmpdir(), 'acs-bench-start-'));
      try {
        const first = await startService(v, TEST_CORE, [], { DATA_DIR: dataDir });
        coldStarts.get(v.label)!.push({ ms: first.startMs, cpuMs: first.startCpuMs });
        // What the first start still does after /health (the admin password's hash) finishes before the stop.
        await sleep(1000);
        await first.stop();
        const again = await startService(v, TEST_CORE, [], { DATA_DIR: dataDir });
        restarts.get(v.label)!.push({ ms: again.startMs, cpuMs: again.startCpuMs });
        await again.stop();
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    }
  }

  console.error('starting the services under test');
  const services = new Map<string, Running & { token: string; idleRssMb: number }>();
  for (const v of versions) {
    const s = await startService(v, TEST_CORE);
    cleanups.push(() => s.stop());
    const token = await serviceToken(s.url);
    await prepare(s.url, upstreamUrl, token);
    await checkScenarios(s.url, token);
    services.set(v.label, { ...s, token, idleRssMb: 0 });
  }
  await sleep(1000);
  for (const s of services.values()) s.idleRssMb = rssMb(s.pid);

  const targets: Target[] = [
    {
      key: 'baseline',
      scenario: 'baseline',
      pid: () => baseline.pid!,
      request: () => ({ url: `http://127.0.0.1:${basePort}/desks/${DESK_DOMAIN}/api${TICKET_PATH}` }),
    },
  ];
  for (const scenario of ['proxy', 'tool'] as const) {
    for (const v of versions) {
      const s = services.get(v.label)!;
      targets.push({
        key: `${scenario}:${v.label}`,
        scenario,
        pid: () => s.pid,
        request: () => requests(s.url, s.token)[scenario],
      });
    }
  }

  console.error(`warm-up (${WARMUP} s each)`);
  for (const t of targets) {
    const r = await runWrk(t.request(), { core: LOAD_CORE, connections: CONNECTIONS, seconds: WARMUP });
    if (r.errors) throw new Error(`${t.key}: ${r.errors} errors of ${r.requests} requests during the warm-up`);
  }
  for (const s of services.values()) resetPeakRss(s.pid);
  resetPeakRss(baseline.pid!);

  const rounds: RoundResult[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    // A fresh service token per round, so a long run never outlives one.
    for (const s of services.values()) s.token = await serviceToken(s.url);
    const order = [targets[0]!];
    for (const scenario of ['proxy', 'tool'] as const) {
      order.push(
        ...inRound(
          targets.filter((t) => t.scenario === scenario),
          round - 1,
        ),
      );
    }
    for (const t of order) {
      const r = await measure(t, round);
      rounds.push(r);
      console.error(
        `  round ${round} ${t.key.padEnd(28)} ${r.rps.toFixed(0).padStart(6)} req/s  p99 ${r.p99Ms.toFixed(1).padStart(6)} ms` +
          `  ${r.cpuUs.toFixed(0).padStart(4)} µs CPU/req  other load on the test core ${r.otherOnTestCorePct.toFixed(0)} %` +
          (r.errors ? `  ${r.errors} ERRORS` : ''),
      );
    }
  }
  const loadRss = new Map([...services].map(([label, s]) => [label, peakRssMb(s.pid)]));
  const baselineRss = peakRssMb(baseline.pid!);

  console.error(`streaming ${STREAM_BYTES >> 20} MB each way, ${STREAM_RUNS} runs`);
  const streams: Array<{ run: number; kind: 'download' | 'upload'; key: string } & Transfer> = [];
  const streamTargets: Array<{ key: string; url: string; headers: Record<string, string>; pid: number }> = [
    { key: 'baseline', url: `http://127.0.0.1:${basePort}`, headers: {}, pid: baseline.pid! },
    ...versions.map((v) => {
      const s = services.get(v.label)!;
      return {
        key: v.label,
        url: `${s.url}/proxy`,
        headers: { authorization: `Bearer ${s.token}`, connection_name: 'helpdesk', identifier: 'bench' },
        pid: s.pid,
      };
    }),
  ];
  const uploadDir = mkdtempSync(join(os.tmpdir(), 'acs-bench-upload-'));
  cleanups.push(() => rmSync(uploadDir, { recursive: true, force: true }));
  const uploadFile = join(uploadDir, 'body');
  writeFileSync(uploadFile, '');
  truncateSync(uploadFile, STREAM_BYTES);
  // Run 0 is a warm-up, reported but not judged, as the load scenarios have theirs: in every run measured, the first
  // transfer through the baseline was its slowest each way (bench/RESULTS.md, sixteenth part). From run 1 the
  // baseline goes first in odd runs and last in even ones, so that a drift of the machine within a run does not
  // always favour the same side.
  for (let run = 0; run <= STREAM_RUNS; run++) {
    for (const s of services.values()) s.token = await serviceToken(s.url);
    for (const t of streamTargets.slice(1)) t.headers.authorization = `Bearer ${services.get(t.key)!.token}`;
    const order = [streamTargets[0]!, ...inRound(streamTargets.slice(1), run - 1)];
    for (const kind of ['download', 'upload'] as const) {
      for (const t of run % 2 === 0 && run > 0 ? [...order.slice(1), order[0]!] : order) {
        const path = kind === 'download' ? `/big?bytes=${STREAM_BYTES}` : '/upload';
        streams.push({
          run,
          kind,
          key: t.key,
          ...(await transfer(kind, `${t.url}${path}`, t.headers, t.pid, uploadFile)),
        });
      }
    }
  }
  for (const s of services.values()) await s.stop();
  await stop(baseline);

  console.error('dry run, in process');
  type DryRun = Record<string, { cpu: number; wall: number }>;
  const dryPasses = new Map<string, DryRun[]>(versions.map((v) => [v.label, []]));
  const dryErrors = new Map<string, string>();
  // Two passes, the versions' order swapped in the second, as with the load rounds.
  for (let pass = 0; pass < 2; pass++) {
    for (const v of inRound(versions, pass)) {
      if (dryErrors.has(v.label)) continue;
      const child = spawnOnCore(
        TEST_CORE,
        process.execPath,
        ['--import', 'tsx', join(ROOT, 'bench/dry-run.ts'), v.root],
        { cwd: v.root, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      let err = '';
      child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
      const code = await new Promise<number | null>((r) => child.once('close', r));
      try {
        if (code !== 0) throw new Error();
        dryPasses.get(v.label)!.push(JSON.parse(out.trim().split('\n').pop() ?? '') as DryRun);
      } catch {
        // An older version whose internals differ still gets its load figures.
        dryErrors.set(v.label, `exit ${code}: ${(err || out).trim().split('\n').slice(-3).join(' ')}`);
      }
    }
  }
  const dryRuns = new Map<string, Report['dryRun'][string]>();
  for (const v of versions) {
    const passes = dryPasses.get(v.label)!;
    const error = dryErrors.get(v.label);
    if (error) {
      dryRuns.set(v.label, { error });
      continue;
    }
    const tools = Object.fromEntries(
      Object.keys(passes[0]!).map((tool) => [
        tool,
        { cpu: median(passes.map((p) => p[tool]!.cpu)), wall: median(passes.map((p) => p[tool]!.wall)) },
      ]),
    );
    dryRuns.set(v.label, { tools, passes });
  }
  await cleanup();

  const report: Report = {
    date: new Date().toISOString(),
    machine: machineDescription(),
    loadavg: os.loadavg(),
    settings: {
      rounds: ROUNDS,
      seconds: SECONDS,
      warmupSeconds: WARMUP,
      connections: CONNECTIONS,
      loadCore: LOAD_CORE,
      testCore: TEST_CORE,
      streamMb: STREAM_BYTES >> 20,
      streamRuns: STREAM_RUNS,
      starts: STARTS,
    },
    versions: versions.map((v) => v.label),
    rounds,
    coldStarts: Object.fromEntries(coldStarts),
    restarts: Object.fromEntries(restarts),
    idleRssMb: Object.fromEntries([...services].map(([label, s]) => [label, s.idleRssMb])),
    loadRssMb: Object.fromEntries(loadRss),
    baselineLoadRssMb: baselineRss,
    streams,
    dryRun: Object.fromEntries(dryRuns),
    seconds: (performance.now() - t0) / 1000,
  };
  const md = markdown(report);
  console.log(md);
  const dir = join(ROOT, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const stamp = report.date.replace(/[:.]/g, '-');
  writeFileSync(join(dir, `${stamp}.json`), JSON.stringify(report, null, 2) + '\n');
  writeFileSync(join(dir, `${stamp}.md`), md);
  console.error(`done in ${report.seconds.toFixed(0)} s; bench/results/${stamp}.json and .md`);
}

try {
  if (opt.workers) {
    await runWorkersBench({
      root: ROOT,
      rounds: ROUNDS,
      seconds: SECONDS,
      warmupSeconds: WARMUP,
      connections: CONNECTIONS,
      databaseUrl: opt['database-url'],
    });
  } else {
    await main();
  }
  process.exit(0);
} catch (e) {
  console.error(`bench failed: ${e instanceof Error ? e.message : String(e)}`);
  await cleanup();
  process.exit(1);
}
