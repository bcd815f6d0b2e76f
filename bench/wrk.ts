/**
 * One wrk run: a native load generator on its own core, one thread, a fixed number of keep-alive connections.
 * The request comes from a Lua script; wrk's done() hook writes the exact counts and latency percentiles as JSON.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { spawnOnCore } from './system.ts';

export interface WrkRequest {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** A mark in the body that each request replaces with its own number (new identifiers, one per request). */
  unique?: string;
}

export interface WrkResult {
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Socket errors (connect, read, write, timeout) and answers that were not 2xx or 3xx. */
  errors: number;
}

const MARK = 'BENCH_WRK_JSON ';

/** A Lua long string that no part of the value can close. */
function luaString(value: string): string {
  let eq = '';
  while (value.includes(`]${eq}]`)) eq += '=';
  return `[${eq}[${value}]${eq}]`;
}

function script(req: WrkRequest): string {
  const lines = [`wrk.method = ${luaString(req.method ?? 'GET')}`];
  if (req.body !== undefined) lines.push(`wrk.body = ${luaString(req.body)}`);
  for (const [k, v] of Object.entries(req.headers ?? {}))
    lines.push(`wrk.headers[ ${luaString(k)} ] = ${luaString(v)}`);
  if (req.unique) {
    const mark = luaString(req.unique.replace(/[^\w]/g, '%$&'));
    lines.push('local n = 0', 'request = function()', '  n = n + 1');
    lines.push(`  return wrk.format(nil, nil, nil, (wrk.body:gsub(${mark}, tostring(n))))`, 'end');
  }
  lines.push(
    'done = function(summary, latency, requests)',
    '  local e = summary.errors',
    `  io.write(string.format('${MARK}{"requests":%d,"duration_us":%d,"errors":%d,"p50_us":%d,"p99_us":%d,"max_us":%d}\\n',`,
    '    summary.requests, summary.duration, e.connect + e.read + e.write + e.status + e.timeout,',
    '    latency:percentile(50), latency:percentile(99), latency.max))',
    'end',
  );
  return lines.join('\n') + '\n';
}

export async function runWrk(
  req: WrkRequest,
  opts: { core: number | string; connections: number; seconds: number; threads?: number },
): Promise<WrkResult> {
  const dir = mkdtempSync(join(os.tmpdir(), 'acs-bench-wrk-'));
  const file = join(dir, 'request.lua');
  writeFileSync(file, script(req));
  try {
    const proc = spawnOnCore(
      opts.core,
      'wrk',
      [
        `-t${opts.threads ?? 1}`,
        `-c${opts.connections}`,
        `-d${opts.seconds}s`,
        '--timeout',
        '10s',
        '-s',
        file,
        req.url,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    const code = await new Promise<number | null>((resolve, reject) => {
      proc.once('error', reject);
      proc.once('close', resolve);
    });
    const line = out.split('\n').find((l) => l.startsWith(MARK));
    if (code !== 0 || !line) throw new Error(`wrk failed (exit ${code}): ${err || out}`);
    const r = JSON.parse(line.slice(MARK.length)) as Record<string, number>;
    const seconds = r.duration_us! / 1e6;
    return {
      requests: r.requests!,
      seconds,
      rps: r.requests! / seconds,
      p50Ms: r.p50_us! / 1000,
      p99Ms: r.p99_us! / 1000,
      maxMs: r.max_us! / 1000,
      errors: r.errors!,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
