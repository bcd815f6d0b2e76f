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
  /** A mark in the body and header values that each request replaces with its own number: 0, 1, 2 … */
  unique?: string;
  /** With `unique`: the numbers wrap at this value (0 … modulo − 1), so that the requests cycle through that many. */
  modulo?: number;
  /**
   * Exactly this many requests (numbered 0 … count − 1), instead of as many as `seconds` allows: wrk stops once all are
   * answered. A connection with nothing left to send asks for /ready (200) every 50 ms until then.
   */
  count?: number;
  /** With `count`: the status every counted request must get (not 200); any other counts as an error. */
  status?: number;
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
const DONE_MARK = 'BENCH_WRK_DONE';

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
  if (req.count !== undefined && (!Number.isInteger(req.count) || req.count < 1 || !req.status || req.status === 200))
    throw new Error('runWrk: count must be a whole number ≥ 1, with a status other than 200');
  if (req.unique || req.count) {
    const mark = luaString((req.unique ?? '').replace(/[^\w]/g, '%$&'));
    // n starts at -2: before the run, wrk calls request() once on the first thread's state to check what it
    // returns (script_verify_request), and does not send that one (number -1).
    lines.push('local n = -2', 'request = function()', '  n = n + 1');
    // (The count's requests are all sent: the connection waits on /ready, cheap and answered 200, until the end.)
    if (req.count) lines.push(`  if n >= ${req.count} then return wrk.format('GET', '/ready', {}, '') end`);
    if (req.unique) {
      if (req.modulo !== undefined && (!Number.isInteger(req.modulo) || req.modulo < 1))
        throw new Error('runWrk: modulo must be a whole number ≥ 1');
      lines.push(`  local id, h = tostring(${req.modulo ? `n % ${req.modulo}` : 'n'}), {}`);
      // (wrk.format left a numeric Content-Length among them: it is set again for each body.)
      lines.push(
        `  for k, v in pairs(wrk.headers) do if type(v) == 'string' then h[k] = (v:gsub(${mark}, id)) end end`,
      );
      lines.push(`  return wrk.format(nil, nil, h, wrk.body and (wrk.body:gsub(${mark}, id)) or nil)`, 'end');
    } else lines.push('  return wrk.format()', 'end');
  }
  if (req.count) {
    // Counted in the thread's state (globals, read by done() through thread:get). The last answer prints DONE_MARK,
    // on which runWrk interrupts wrk: its main thread otherwise sleeps out the whole duration.
    lines.push(
      'answered, wrong = 0, 0',
      `delay = function() if n >= ${req.count} - 1 then return 50 end return 0 end`,
      'response = function(status)',
      `  if status == ${req.status} then answered = answered + 1 elseif status ~= 200 then wrong = wrong + 1 end`,
      `  if answered + wrong == ${req.count} then io.write('${DONE_MARK}\\n'); io.flush(); wrk.thread:stop() end`,
      'end',
      'local threads = {}',
      'setup = function(thread) table.insert(threads, thread) end',
    );
  }
  lines.push('done = function(summary, latency, requests)', '  local e = summary.errors');
  if (req.count) {
    // Answers other than the count's status are counted by response() (wrk counts every non-2xx as an error).
    lines.push(
      '  local answered, wrong = 0, 0',
      "  for _, t in ipairs(threads) do answered = answered + t:get('answered'); wrong = wrong + t:get('wrong') end",
      '  local requests, errors = answered + wrong, e.connect + e.read + e.write + e.timeout + wrong',
    );
  } else lines.push('  local requests, errors = summary.requests, e.connect + e.read + e.write + e.status + e.timeout');
  lines.push(
    `  io.write(string.format('${MARK}{"requests":%d,"duration_us":%d,"errors":%d,"p50_us":%d,"p99_us":%d,"max_us":%d}\\n',`,
    '    requests, summary.duration, errors, latency:percentile(50), latency:percentile(99), latency.max))',
    'end',
  );
  return lines.join('\n') + '\n';
}

export async function runWrk(
  req: WrkRequest,
  opts: { core: number | string; connections: number; seconds: number; threads?: number },
): Promise<WrkResult> {
  // Each request's own number is counted in the thread's Lua state: one thread, or numbers would repeat.
  if ((req.unique || req.count) && (opts.threads ?? 1) !== 1)
    throw new Error('runWrk: unique and count need one thread');
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
    proc.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      // A counted run is over once its last request is answered (see `count`).
      if (req.count && out.includes(DONE_MARK)) proc.kill('SIGINT');
    });
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
