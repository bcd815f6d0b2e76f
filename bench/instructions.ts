/**
 * `npx tsx bench/instructions.ts [scenarios] [--against <git-ref>] [--warmup N] [--requests N] [--by-origin]`:
 * user-space instructions per request, counted by valgrind's callgrind, for the bare pass-through (bench/baseline.ts)
 * and the service's proxy GET and tool call (the requests of `npm run bench`). `scenarios` is a comma-separated list
 * of `baseline`, `proxy` and `tool` (default all three).
 *
 * Why: the bench's CPU per request is the measure the targets are set in, but on a shared virtual machine it moves by
 * 10-20 % between runs of the same code, more than most changes to a hot path make. An instruction count does not:
 * callgrind runs the process on a simulated CPU and counts every instruction it executes in user space, whatever
 * else the machine does; for the baseline and the proxy, two runs of the same code agree to within a few tenths of a
 * per cent (the tool call's total less closely: below). What it leaves out:
 * time in the kernel (system calls, waking the peer of a socket), and how fast the instructions ran (cache misses,
 * branch mispredictions), which is why it complements the CPU figures and does not replace them.
 *
 * How: each process under test (one per scenario and version, so each count is of one kind of request) runs under
 * `valgrind --tool=callgrind --instr-atstart=no` on the test core, the fake upstream on the other. A client in this
 * process sends `--warmup` requests (default 30 000: V8's optimising compiler is then done with the baseline's and
 * the proxy's hot paths, not quite with the tool call's; with fewer, more of its work is counted), 8 at a time on
 * keep-alive connections, then switches counting on
 * (`callgrind_control -i on`), sends `--requests` more (default 5 000), and has the counts written out, one file per
 * thread (`--separate-threads=yes`). The count divided by the requests is what a request costs: in all threads, the
 * work of V8's background compiler and collector and of SQLite's checkpoints included (what the bench's CPU per
 * request counts), and in the main thread alone, where JavaScript runs, which repeats more closely while V8 is still
 * compiling on the others. Under callgrind a request takes 50-100 times longer, so a run of the three scenarios
 * takes several minutes.
 *
 * `--against <ref>` counts that version's proxy and tool call too (checked out into a temporary git worktree) and
 * reports current ÷ ref. `--by-origin` starts node with `--perf-basic-prof --interpreted-frames-native-stack` so
 * that JIT code can be named, and splits each count by where the instructions ran: node's own JavaScript, undici,
 * got, the service's code, V8's builtins and runtime (property access, inline caches, string and JSON work), its
 * garbage collector and compilers, SQLite, libc.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DESK_DOMAIN, readyForLoad, startService, TICKET_PATH, versionsAgainst, type Version } from './service.ts';
import { ensureTools, freePort, pinSelf, sleep, startHelper, stop, wholeOption } from './system.ts';
import type { WrkRequest } from './wrk.ts';

const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    against: { type: 'string' },
    warmup: { type: 'string', default: '30000' },
    requests: { type: 'string', default: '5000' },
    'by-origin': { type: 'boolean', default: false },
  },
});
const SCENARIOS = ['baseline', 'proxy', 'tool'] as const;
type Scenario = (typeof SCENARIOS)[number];
const scenarios = (positionals[0] ?? SCENARIOS.join(',')).split(',') as Scenario[];
for (const s of scenarios)
  if (!SCENARIOS.includes(s))
    throw new Error(`unknown scenario "${s}": give a comma-separated list of ${SCENARIOS.join(', ')}`);
const warmup = wholeOption('warmup', opt.warmup);
const requests = wholeOption('requests', opt.requests);
if (requests < 1) throw new Error('--requests must be at least 1');
const byOrigin = opt['by-origin'];
const ROOT = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
const LOAD_CORE = 0;
const TEST_CORE = 1;
/** Requests in flight at once: enough to keep the process busy, few enough to leave nothing half-done between phases. */
const CONCURRENCY = 8;

ensureTools([{ command: 'valgrind', probe: ['--version'], pkg: 'valgrind' }]);
pinSelf(LOAD_CORE);

interface Target {
  label: string;
  scenario: Scenario;
  /** The process's pid and environment: callgrind_control finds a process by a name made from its USER and HOST. */
  pid: number;
  env: NodeJS.ProcessEnv;
  outFile: string;
  request: WrkRequest;
  stop(): Promise<void>;
}

/** Sends `count` requests, CONCURRENCY at a time on keep-alive connections; each must answer 2xx. */
async function send(request: WrkRequest, count: number, agent: http.Agent): Promise<void> {
  let started = 0;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(
        request.url,
        { method: request.method ?? 'GET', headers: request.headers, agent },
        (res) => {
          res.resume();
          res.once('end', () =>
            res.statusCode! >= 200 && res.statusCode! < 300
              ? resolve()
              : reject(new Error(`${request.method ?? 'GET'} ${request.url} answered ${res.statusCode}`)),
          );
        },
      );
      req.once('error', reject);
      req.end(request.body);
    });
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (started++ < count) await one();
    }),
  );
}

function callgrindControl(t: Target, ...args: string[]): void {
  const r = spawnSync('callgrind_control', [...args, String(t.pid)], { env: t.env, encoding: 'utf8' });
  if (r.status !== 0 || /error|not found/i.test(r.stderr))
    throw new Error(`callgrind_control ${args.join(' ')} ${t.pid}: ${r.stderr || r.stdout}`);
}

/**
 * The files of the dump callgrind wrote last for `outFile`, one per thread (`<outFile>.<n>-<thread>`, `-01` the main
 * thread's), once each holds its totals.
 */
async function lastDump(outFile: string): Promise<{ main: string; threads: string[] }> {
  const dir = join(outFile, '..');
  const base = outFile.slice(dir.length + 1);
  const name = new RegExp(`^${base.replace(/\./g, '\\.')}\\.(\\d+)-(\\d+)$`);
  for (let waited = 0; waited < 30_000; waited += 100) {
    const files = readdirSync(dir)
      .map((f) => ({ f, m: name.exec(f) }))
      .filter((x) => x.m !== null)
      .map(({ f, m }) => ({ path: join(dir, f), dump: Number(m![1]), thread: Number(m![2]) }));
    const last = Math.max(0, ...files.map((x) => x.dump));
    const threads = files.filter((x) => x.dump === last);
    const main = threads.find((x) => x.thread === 1);
    // Each file is written in one go, but read them only once every one has its totals.
    if (main && threads.every((x) => /^totals:\s*\d+/m.test(readFileSync(x.path, 'utf8'))))
      return { main: main.path, threads: threads.map((x) => x.path) };
    await sleep(100);
  }
  throw new Error(`callgrind wrote no dump for ${outFile}`);
}

const totalOf = (file: string) => Number(/^totals:\s*(\d+)/m.exec(readFileSync(file, 'utf8'))![1]);

/**
 * Instructions per request in the target's measured window: of all the process's threads, and of its main thread
 * (where JavaScript runs) alone; and the dump's files.
 */
async function count(t: Target): Promise<{ perRequest: number; mainPerRequest: number; files: string[] }> {
  const agent = new http.Agent({ keepAlive: true });
  await send(t.request, warmup, agent);
  callgrindControl(t, '--instr=on');
  callgrindControl(t, '--zero');
  await send(t.request, requests, agent);
  callgrindControl(t, '--dump');
  agent.destroy();
  const dump = await lastDump(t.outFile);
  const total = dump.threads.reduce((sum, f) => sum + totalOf(f), 0);
  return { perRequest: total / requests, mainPerRequest: totalOf(dump.main) / requests, files: dump.threads };
}

const callgrind = (outFile: string) => [
  'valgrind',
  '--tool=callgrind',
  '--instr-atstart=no',
  '--separate-threads=yes',
  `--callgrind-out-file=${outFile}`,
  '--quiet',
];
// V8 writes its log next to the perf map unless told where: nowhere, here.
const originFlags = byOrigin ? ['--perf-basic-prof', '--interpreted-frames-native-stack', '--logfile=/dev/null'] : [];

async function startTarget(scenario: Scenario, version: Version, upstreamUrl: string): Promise<Target> {
  const dir = mkdtempSync(join(os.tmpdir(), 'acs-instructions-'));
  const outFile = join(dir, 'callgrind.out');
  if (scenario === 'baseline') {
    const port = await freePort();
    const proc = await startHelper(
      TEST_CORE,
      ROOT,
      'bench/baseline.ts',
      [String(port), upstreamUrl],
      callgrind(outFile),
      originFlags,
    );
    return {
      label: 'baseline',
      scenario,
      pid: proc.pid!,
      env: process.env,
      outFile,
      request: { url: `http://127.0.0.1:${port}/desks/${DESK_DOMAIN}/api${TICKET_PATH}` },
      stop: () => stop(proc),
    };
  }
  const env = { HOST: '127.0.0.1' };
  const svc = await startService(version, TEST_CORE, originFlags, env, undefined, callgrind(outFile));
  const load = await readyForLoad(svc.url, upstreamUrl);
  return {
    label: version.label,
    scenario,
    pid: svc.pid,
    env: { ...process.env, ...env },
    outFile,
    request: load[scenario],
    stop: () => svc.stop(),
  };
}

/** Where a function's own instructions ran, by its name in callgrind's output (JIT code named by perf map). */
function originOf(fn: string, jitName: (address: number) => string | undefined): string {
  const address = /^(?:\?\?\?:)?0x([0-9a-f]+)(?: \([\d,]+x\))? \[\?\?\?\]/.exec(fn);
  if (address) {
    const name = jitName(parseInt(address[1]!, 16));
    if (name === undefined) return 'JIT code without a name (WebAssembly: undici’s HTTP parser; stubs)';
    if (name.startsWith('RegExp:')) return 'regular expressions (compiled)';
    if (/ node:/.test(name)) return "node's JavaScript (http, streams, events, net, timers)";
    if (/\/undici\/|\/agent-[A-Z0-9]+\.js/.test(name)) return 'undici';
    if (/\/got\/|\/got-client-[A-Z0-9]+\.js/.test(name)) return 'got';
    if (/^(JS|Eval|Script|Function|LazyCompile):/.test(name))
      return 'the service’s JavaScript (or the baseline script)';
    return "V8's builtins, inline caches and runtime";
  }
  if (fn.includes('better_sqlite3')) return 'SQLite (better-sqlite3)';
  if (/libc\.so/.test(fn)) return 'libc (malloc, memcpy)';
  if (fn.includes('llhttp')) return "node's HTTP parser (llhttp, native)";
  if (
    /Scaveng|Marking|Sweep|MarkCompact|Evacuat|RememberedSet|Heap::|heap::|GCTracer|MemoryAllocator|MinorMC|PagedSpace|NewSpace|LocalHeap|Worklist|SlotSet/.test(
      fn,
    )
  )
    return "V8's garbage collector";
  if (
    /compiler::|[Mm]aglev|baseline::|BytecodeGenerator|Parser|Scanner|turboshaft|Compiler::|OptimizedCompilation/.test(
      fn,
    )
  )
    return "V8's compilers";
  if (/Builtins_|v8::/.test(fn)) return "V8's builtins, inline caches and runtime";
  if (/node::|uv_|uv__/.test(fn)) return "node's C++ and libuv";
  return 'other native code';
}

/** Instructions per request by origin, from a callgrind dump's files (one per thread) and the process's perf map. */
function byOriginOf(files: string[], pid: number): Map<string, number> {
  // The perf map lists code objects in the order they were made; an address can be reused by later code, so the
  // last entry that covers an address names it.
  const entries: Array<[number, number, string]> = [];
  try {
    for (const line of readFileSync(`/tmp/perf-${pid}.map`, 'utf8').split('\n')) {
      const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
      if (m) entries.push([parseInt(m[1]!, 16), parseInt(m[2]!, 16), m[3]!]);
    }
  } finally {
    rmSync(`/tmp/perf-${pid}.map`, { force: true });
  }
  const named = new Map<number, string | undefined>();
  const jitName = (a: number) => {
    if (!named.has(a)) {
      let name: string | undefined;
      for (let i = entries.length - 1; i >= 0; i--) {
        const [start, size, n] = entries[i]!;
        if (start <= a && a < start + size) {
          name = n;
          break;
        }
      }
      named.set(a, name);
    }
    return named.get(a);
  };
  const origins = new Map<string, number>();
  for (const file of files) {
    const r = spawnSync('callgrind_annotate', ['--threshold=100', '--inclusive=no', file], {
      encoding: 'utf8',
      maxBuffer: 1 << 28,
    });
    if (r.status !== 0) throw new Error(`callgrind_annotate ${file}: ${r.stderr}`);
    for (const line of r.stdout.split('\n')) {
      const m = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$/.exec(line);
      if (!m || m[2]!.includes('PROGRAM TOTALS')) continue;
      const origin = originOf(m[2]!, jitName);
      origins.set(origin, (origins.get(origin) ?? 0) + Number(m[1]!.replace(/,/g, '')) / requests);
    }
  }
  return origins;
}

const upPort = await freePort();
const upstreamUrl = `http://127.0.0.1:${upPort}`;
const upstream = await startHelper(LOAD_CORE, ROOT, 'bench/upstream.ts', [String(upPort)]);
const { versions, remove } = versionsAgainst(ROOT, opt.against);
const results: Array<{
  label: string;
  scenario: Scenario;
  perRequest: number;
  mainPerRequest: number;
  origins?: Map<string, number>;
}> = [];
const kilo = (n: number) => `${(n / 1000).toFixed(1)}k`;
console.log(
  `Instructions per request under callgrind: ${warmup} requests of warm-up, then ${requests} counted, ` +
    `${CONCURRENCY} at a time; all threads, and the main thread (JavaScript) alone.`,
);
try {
  for (const scenario of scenarios) {
    for (const version of scenario === 'baseline' ? [versions.at(-1)!] : versions) {
      const t = await startTarget(scenario, version, upstreamUrl);
      try {
        const { perRequest, mainPerRequest, files } = await count(t);
        const origins = byOrigin ? byOriginOf(files, t.pid) : undefined;
        results.push({ label: t.label, scenario, perRequest, mainPerRequest, origins });
        console.log(
          `  ${scenario.padEnd(8)} ${t.label.padEnd(14)} ${kilo(perRequest).padStart(8)} instructions per request, ` +
            `${kilo(mainPerRequest)} on the main thread`,
        );
      } finally {
        await t.stop();
        rmSync(join(t.outFile, '..'), { recursive: true, force: true });
      }
    }
  }
} finally {
  remove();
  await stop(upstream);
}

const base = results.find((r) => r.scenario === 'baseline');
const ratio = (n: number, of: number | undefined) => (of ? `${(n / of).toFixed(2)}×` : 'n/a');
console.log('\n| Scenario | Version | Instructions per request | ÷ baseline | Main thread | ÷ baseline |');
console.log('| -------- | ------- | ------------------------ | ---------- | ----------- | ---------- |');
for (const r of results)
  console.log(
    `| ${r.scenario} | ${r.label} | ${kilo(r.perRequest)} | ${ratio(r.perRequest, base?.perRequest)} | ` +
      `${kilo(r.mainPerRequest)} | ${ratio(r.mainPerRequest, base?.mainPerRequest)} |`,
  );
if (opt.against !== undefined) {
  for (const scenario of scenarios.filter((s) => s !== 'baseline')) {
    const [ref, current] = versions.map((v) => results.find((r) => r.scenario === scenario && r.label === v.label));
    if (ref && current)
      console.log(
        `${scenario}: current ÷ ${ref.label} = ${(current.perRequest / ref.perRequest).toFixed(3)}× ` +
          `(main thread ${(current.mainPerRequest / ref.mainPerRequest).toFixed(3)}×)`,
      );
  }
}
if (byOrigin) {
  const columns = results.map(
    (r) => `${r.scenario}${versions.length > 1 && r.scenario !== 'baseline' ? ` (${r.label})` : ''}`,
  );
  const origins = [...new Set(results.flatMap((r) => [...r.origins!.keys()]))].sort(
    (a, b) =>
      Math.max(...results.map((r) => r.origins!.get(b) ?? 0)) - Math.max(...results.map((r) => r.origins!.get(a) ?? 0)),
  );
  console.log(`\nBy where the instructions ran (per request, all threads):\n\n| Origin | ${columns.join(' | ')} |`);
  console.log(`| --- | ${columns.map(() => '---').join(' | ')} |`);
  for (const o of origins) console.log(`| ${o} | ${results.map((r) => kilo(r.origins!.get(o) ?? 0)).join(' | ')} |`);
  console.log(`| total | ${results.map((r) => kilo(r.perRequest)).join(' | ')} |`);
}
process.exit(0);
