/**
 * `npx tsx bench/instructions.ts [--against <git-ref>] [--requests N] [--warmup N] [--rounds N]`: instructions per
 * proxy GET and tool call, counted by callgrind in the service process (the JavaScript thread, and all threads), for
 * the working tree and optionally a ref, in one run. Unlike CPU time a count does not move with the machine's load
 * (bench/README.md). Instrumentation is off during the start and the warm-up; `KEEP_CALLGRIND=1` keeps the dumps.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { readyForLoad, startService, versionsAgainst, type Version } from './service.ts';
import { freePort, startHelper, stop } from './system.ts';

const { values: opt } = parseArgs({
  options: {
    against: { type: 'string' },
    requests: { type: 'string', default: '1500' },
    warmup: { type: 'string', default: '3000' },
    rounds: { type: 'string', default: '1' },
  },
});
const count = (name: string, v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a whole number ≥ 1, got "${v}"`);
  return n;
};
const REQUESTS = count('requests', opt.requests);
const WARMUP = count('warmup', opt.warmup);
const ROUNDS = count('rounds', opt.rounds);
if (spawnSync('valgrind', ['--version']).error) throw new Error('valgrind is needed: apt-get install valgrind');

const ROOT = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
const { versions, remove } = versionsAgainst(ROOT, opt.against);

type Req = { url: string; method?: string; headers: Record<string, string>; body?: string };

/** `n` requests, eight at a time. */
async function send(r: Req, n: number): Promise<void> {
  let next = 0;
  const one = async (): Promise<void> => {
    if (next++ >= n) return;
    const res = await fetch(r.url, { method: r.method ?? 'GET', headers: r.headers, body: r.body });
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`${r.method ?? 'GET'} ${r.url}: HTTP ${res.status}`);
    return one();
  };
  await Promise.all(Array.from({ length: 8 }, one));
}

/** Debian's `valgrind` is a shell script that runs valgrind.bin as its child: the pid is found by the output file. */
function callgrindPid(dir: string): number {
  const r = spawnSync('pgrep', ['-f', `callgrind-out-file=${dir}/`], { encoding: 'utf8' });
  const pids = r.stdout.split(/\s+/).filter(Boolean).map(Number);
  if (!pids.length) throw new Error(`no callgrind process writes to ${dir}`);
  return Math.max(...pids);
}

function callgrind(pid: number, ...args: string[]): void {
  // vgdb names its pipes after the HOST variable, which the service has set to its listen address.
  const r = spawnSync('callgrind_control', [...args, String(pid)], {
    encoding: 'utf8',
    env: { ...process.env, HOST: '127.0.0.1' },
  });
  if (r.status !== 0 || /Error/.test(r.stdout + r.stderr))
    throw new Error(`callgrind_control ${args.join(' ')}: ${r.stderr || r.stdout}`);
}

/**
 * The instructions counted in the dumps written since `seen` (callgrind's "totals:" line of each; one file per
 * thread, `cg.out.<dump>-<thread>`, the JavaScript thread being 01): every thread's, and the JavaScript thread's.
 */
function dumpedInstructions(dir: string, seen: Set<string>): { all: number; main: number } {
  const total = { all: 0, main: 0 };
  for (const f of readdirSync(dir)) {
    if (seen.has(f)) continue;
    seen.add(f);
    const m = /^(?:totals|summary):\s+(\d+)/m.exec(readFileSync(join(dir, f), 'utf8'));
    if (!m) continue;
    total.all += Number(m[1]);
    if (/-0*1$/.test(f)) total.main += Number(m[1]);
  }
  return total;
}

const upPort = await freePort();
const up = await startHelper('0-1', ROOT, 'bench/upstream.ts', [String(upPort)]);
const upstreamUrl = `http://127.0.0.1:${upPort}`;
type Counts = { all: number; main: number };
const results = new Map<string, { proxy: Counts[]; tool: Counts[] }>();

async function measure(v: Version): Promise<void> {
  const dir = mkdtempSync(join(os.tmpdir(), 'acs-callgrind-'));
  const svc = await startService(v, '0-1', [], {}, undefined, [
    'valgrind',
    '--tool=callgrind',
    '--smc-check=all-non-file',
    '--instr-atstart=no',
    '--separate-threads=yes',
    `--callgrind-out-file=${dir}/cg.out`,
  ]);
  try {
    const requests = await readyForLoad(svc.url, upstreamUrl);
    const seen = new Set(readdirSync(dir));
    const pid = callgrindPid(dir);
    const r = results.get(v.label) ?? { proxy: [], tool: [] };
    results.set(v.label, r);
    for (const scenario of ['proxy', 'tool'] as const) {
      await send(requests[scenario], WARMUP);
      callgrind(pid, '--instr=on');
      callgrind(pid, '--zero');
      await send(requests[scenario], REQUESTS);
      callgrind(pid, '--dump');
      callgrind(pid, '--instr=off');
      const n = dumpedInstructions(dir, seen);
      r[scenario].push({ all: n.all / REQUESTS, main: n.main / REQUESTS });
    }
  } finally {
    await svc.stop();
    if (!process.env.KEEP_CALLGRIND) rmSync(dir, { recursive: true, force: true });
    else console.error(dir);
  }
}

try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const v of round % 2 ? [...versions].reverse() : versions) {
      console.error(`round ${round + 1}: ${v.label}`);
      await measure(v);
    }
  }
} finally {
  await stop(up);
  remove();
}

const k = (x: number) => `${(x / 1000).toFixed(0)}k`;
const fmt = (xs: Counts[]) => xs.map((x) => `${k(x.main)} (all threads ${k(x.all)})`).join(', ');
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
console.log(
  `instructions per request on the JavaScript thread (and all threads: JIT compilers, GC helpers), callgrind, ` +
    `${REQUESTS} requests after ${WARMUP} of warm-up, per round`,
);
for (const [label, r] of results) console.log(`  ${label}: proxy GET ${fmt(r.proxy)}; tool call ${fmt(r.tool)}`);
if (versions.length === 2) {
  const [a, b] = versions.map((v) => results.get(v.label)!);
  const ratio = (s: 'proxy' | 'tool', t: keyof Counts) =>
    (median(b![s].map((x) => x[t])) / median(a![s].map((x) => x[t]))).toFixed(3);
  console.log(
    `  ${versions[1]!.label} ÷ ${versions[0]!.label} (medians): proxy GET ${ratio('proxy', 'main')}× ` +
      `(all threads ${ratio('proxy', 'all')}×), tool call ${ratio('tool', 'main')}× (all threads ${ratio('tool', 'all')}×)`,
  );
}
