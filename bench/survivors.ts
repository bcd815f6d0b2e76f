/**
 * `npx tsx bench/survivors.ts <proxy|tool> [--against <git-ref>] [--processes N] [--seconds S] [--interval BYTES]
 * [--depth D] [--top K]`: what outlives V8's young-generation collections under one scenario's load, by the stack
 * that allocated it, in bytes per request.
 *
 * An object that outlives two scavenges is moved to the old generation, where only a mark-compact frees it: garbage
 * there is what makes full collections come, and each scavenge copies what it keeps. bench/gc-trace.ts counts those
 * bytes; this says where they come from. Each process is started as `npm start` runs it (on the test core, wrk and
 * the fake upstream on the other, as in `npm run bench`) with bench/survivors-preload.mjs, prepared and warmed up
 * for 3 s. Then, over one wrk run of S seconds (default 8) at 32 connections, V8's sampling heap profiler runs with
 * `includeObjectsCollectedByMinorGC: false, includeObjectsCollectedByMajorGC: true`: a sample is dropped when a
 * scavenge frees its object and kept when the object is still alive at the end or was freed by a mark-compact. One
 * sample stands for about `--interval` bytes (default 4096) allocated at its stack.
 *
 * Read it with care:
 * - The profiler slows the service (the throughput while it runs is printed), so requests last longer and more of
 *   what is in flight at a scavenge outlives it. A smaller interval is finer and slows it more.
 * - What was in flight when the profiler stopped is counted too (a few KB, over tens of thousands of requests).
 * - A frame is a function and the place it starts (mapped through dist/'s source maps), not the line that
 *   allocated; allocations made by V8's own builtins (an array's growth, a hidden class) count to the JavaScript
 *   function that called them.
 *
 * With `--against`, the ref is checked out into a temporary git worktree and N processes of each version (default
 * 2) alternate; the table gives each version's median over its processes.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { SourceMap } from 'node:module';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { readyForLoad, startService, versionsAgainst, type Version } from './service.ts';
import { ensureTools, freePort, median, pinSelf, sleep, startHelper, stop, wholeOption } from './system.ts';
import { runWrk } from './wrk.ts';

const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    against: { type: 'string' },
    processes: { type: 'string' },
    seconds: { type: 'string', default: '8' },
    interval: { type: 'string', default: '4096' },
    depth: { type: 'string', default: '3' },
    top: { type: 'string', default: '25' },
  },
});
const scenario = positionals[0];
if (scenario !== 'proxy' && scenario !== 'tool')
  throw new Error('usage: bench/survivors.ts <proxy|tool> [--against <git-ref>] [--processes N] [--seconds S]');
const whole = (name: 'processes' | 'seconds' | 'interval' | 'depth' | 'top', fallback?: number) =>
  wholeOption(name, opt[name] ?? fallback);
const processes = whole('processes', opt.against === undefined ? 1 : 2);
const seconds = whole('seconds');
const interval = whole('interval');
const depth = whole('depth');
const top = whole('top');
const ROOT = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
ensureTools();
pinSelf(0);

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  callFrame: CallFrame;
  selfSize: number;
  children: ProfileNode[];
}

const maps = new Map<string, SourceMap | null>();
function sourceMap(url: string): SourceMap | null {
  let map = maps.get(url);
  if (map === undefined) {
    map = null;
    try {
      const path = fileURLToPath(url);
      if (existsSync(`${path}.map`))
        map = new SourceMap(
          JSON.parse(readFileSync(`${path}.map`, 'utf8')) as ConstructorParameters<typeof SourceMap>[0],
        );
    } catch {
      // not a file URL, or no readable map: the frame keeps its own place
    }
    maps.set(url, map);
  }
  return map;
}

/** A frame as `function place:line`, the place being a package's file, a source of this project, or Node's. */
function frame(cf: CallFrame): string {
  let place = cf.url ? `${cf.url}:${cf.lineNumber + 1}` : '(native)';
  // Node's SourceMap.findEntry gives {} where nothing maps.
  const found: unknown = cf.url.startsWith('file:')
    ? sourceMap(cf.url)?.findEntry(cf.lineNumber, cf.columnNumber)
    : undefined;
  const entry = found as { originalSource?: string; originalLine?: number } | undefined;
  if (entry?.originalSource) {
    const source = entry.originalSource.replace(/^.*node_modules\//, '').replace(/^(\.\.\/)+/, '');
    place = `${source}:${(entry.originalLine ?? 0) + 1}`;
  } else {
    place = place.replace(/^file:\/\/.*node_modules\//, '');
  }
  return `${cf.functionName || '(anonymous)'} ${place}`;
}

interface Result {
  requests: number;
  rps: number;
  /** Bytes per request, by the innermost `depth` frames of the allocating stack. */
  byStack: Map<string, number>;
  total: number;
}

async function measure(v: Version, upstreamUrl: string, out: string): Promise<Result> {
  rmSync(out, { force: true });
  const svc = await startService(v, 1, ['--import', join(ROOT, 'bench/survivors-preload.mjs')], {
    ACS_SURVIVORS_FILE: out,
    ACS_SURVIVORS_INTERVAL: String(interval),
  });
  try {
    const request = (await readyForLoad(svc.url, upstreamUrl))[scenario as 'proxy' | 'tool'];
    await runWrk(request, { core: 0, connections: 32, seconds: 3 });
    process.kill(svc.pid, 'SIGUSR2');
    await sleep(200);
    const r = await runWrk(request, { core: 0, connections: 32, seconds });
    process.kill(svc.pid, 'SIGUSR2');
    for (let waited = 0; !existsSync(out); waited += 100) {
      if (waited > 30_000) throw new Error(`${v.label}: the service wrote no heap profile to ${out}`);
      await sleep(100);
    }
    await sleep(300); // the file is written in one call; let it finish
    const profile = JSON.parse(readFileSync(out, 'utf8')) as { head?: ProfileNode; error?: string };
    if (!profile.head) throw new Error(`${v.label}: the heap profiler failed: ${profile.error}`);
    const byStack = new Map<string, number>();
    let total = 0;
    const walk = (node: ProfileNode, stack: string[]) => {
      const here = [frame(node.callFrame), ...stack];
      if (node.selfSize) {
        total += node.selfSize;
        const key = here.slice(0, depth).join(' < ');
        byStack.set(key, (byStack.get(key) ?? 0) + node.selfSize);
      }
      for (const child of node.children) walk(child, here);
    };
    walk(profile.head, []);
    const perRequest = new Map([...byStack].map(([k, bytes]) => [k, bytes / Math.max(1, r.requests)]));
    return { requests: r.requests, rps: r.rps, byStack: perRequest, total: total / Math.max(1, r.requests) };
  } finally {
    await svc.stop();
  }
}

const { versions, remove: removeRef } = versionsAgainst(ROOT, opt.against);
const upPort = await freePort();
const up = await startHelper(0, ROOT, 'bench/upstream.ts', [String(upPort)]);
const dir = mkdtempSync(join(os.tmpdir(), 'acs-survivors-'));
const results = new Map<string, Result[]>(versions.map((v) => [v.label, []]));
try {
  console.log(
    `${scenario}: ${processes} fresh process(es) per version; 3 s of warm-up, then ${seconds} s sampled at 32 ` +
      `connections, one sample per ~${interval} bytes allocated; bytes per request that outlived the scavenges`,
  );
  let n = 0;
  for (let i = 0; i < processes; i++) {
    for (const v of i % 2 ? [...versions].reverse() : versions) {
      const r = await measure(v, `http://127.0.0.1:${upPort}`, join(dir, `${n++}.json`));
      results.get(v.label)!.push(r);
      console.log(
        `  ${v.label.padEnd(12)} ${r.rps.toFixed(0).padStart(5)} req/s while sampled, ${r.requests} requests: ` +
          `${r.total.toFixed(1)} bytes per request outlived the scavenges`,
      );
    }
  }
  const labels = [...results.keys()];
  const medianOf = (label: string, key: string) => median(results.get(label)!.map((r) => r.byStack.get(key) ?? 0));
  const keys = new Set(labels.flatMap((l) => results.get(l)!.flatMap((r) => [...r.byStack.keys()])));
  const rows = [...keys]
    .map((k) => ({ k, v: labels.map((l) => medianOf(l, k)) }))
    .sort((a, b) => Math.max(...b.v) - Math.max(...a.v))
    .slice(0, top);
  console.log(`\nBytes per request (median over each version's processes), by allocating stack, innermost first:`);
  console.log(`${labels.map((l) => l.slice(0, 12).padStart(12)).join(' ')}  stack`);
  console.log(
    `${labels
      .map((l) =>
        median(results.get(l)!.map((r) => r.total))
          .toFixed(1)
          .padStart(12),
      )
      .join(' ')}  (all)`,
  );
  for (const { k, v } of rows) console.log(`${v.map((x) => x.toFixed(1).padStart(12)).join(' ')}  ${k}`);
} finally {
  await stop(up);
  removeRef();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
