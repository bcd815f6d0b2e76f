/**
 * `npm run bench`: the service against a bare node:http pass-through, measured in the same run on
 * loopback, alternating runs, medians of three. Prints one table and writes JSON + Markdown under
 * bench/results/. Not a test: nothing here asserts a time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { AgentConnectorClient } from '../runtime/client/index.ts';
import { freePort } from '../test/helpers/harness.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DURATION = Number(process.env.BENCH_DURATION ?? 4);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const STREAM_BYTES = Number(process.env.BENCH_STREAM_MB ?? 200) * 1024 * 1024;
const CLIENT_ID = 'bench_client';
const CLIENT_SECRET = 'bench_secret_0123456789abcdefghij';
const ROOT = new URL('..', import.meta.url).pathname;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function child(args: string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
}

async function waitHealthy(url: string, timeoutMs = 60_000): Promise<number> {
  const start = performance.now();
  while (performance.now() - start < timeoutMs) {
    try {
      const res = await fetch(`${url}/health`);
      if (res.ok) return performance.now() - start;
    } catch {
      // not up yet
    }
    await sleep(10);
  }
  throw new Error(`${url} did not become healthy`);
}

/** User + system CPU time of a process, in microseconds (from /proc; clock ticks of 10 ms). */
function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

async function startService(upstreamUrl: string) {
  const port = await freePort();
  const dataDir = mkdtempSync(join(os.tmpdir(), 'acs-bench-'));
  const started = performance.now();
  const proc = child(['runtime/main.ts'], {
    PORT: String(port),
    DATA_DIR: dataDir,
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    INITIAL_CLIENT_ID: CLIENT_ID,
    INITIAL_CLIENT_SECRET: CLIENT_SECRET,
    LOG_LEVEL: 'warn',
  });
  const url = `http://127.0.0.1:${port}`;
  await waitHealthy(url);
  const coldStartMs = performance.now() - started;
  const client = new AgentConnectorClient({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, envUrl: url });
  await client.createConnection({
    connection_name: 'helpdesk',
    connector: 'helpdesk',
    api_base_url: `${upstreamUrl}/desks/{domain}/api`,
  });
  await client.upsertConnectedAccount({
    connectionName: 'helpdesk',
    identifier: 'bench',
    credentials: { domain: 'acme.zendesk.com', email: 'bench@acme.com', api_token: 'bench-token-123456' },
  });
  await client.createConnection({
    connection_name: 'mail',
    connector: 'mail',
    client_id: 'bench-app',
    client_secret: 'bench-app-secret',
    api_base_url: upstreamUrl,
    oauth: { authorize_url: `${upstreamUrl}/oauth/authorize`, token_url: `${upstreamUrl}/oauth/token` },
  });
  await client.upsertConnectedAccount({
    connectionName: 'mail',
    identifier: 'bench',
    credentials: { access_token: 'bench-access', refresh_token: 'bench-refresh', expires_in: 3600 },
  });
  const tokenRes = await fetch(`${url}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({ client_id: CLIENT_ID, client_secret: CLIENT_SECRET }),
  });
  const token = ((await tokenRes.json()) as { access_token: string }).access_token;
  return { proc, url, client, token, dataDir, coldStartMs };
}

interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU of the process under test (service or bare pass-through) per request, µs. */
  cpuPerRequest: number;
}

async function load(
  opts: { url: string; method?: string; headers?: Record<string, string>; body?: string },
  pid: number,
): Promise<LoadResult> {
  const cpu0 = cpuMicros(pid);
  const r = await autocannon({
    ...opts,
    method: (opts.method ?? 'GET') as 'GET',
    connections: CONNECTIONS,
    duration: DURATION,
    pipelining: 1,
  });
  const cpu = cpuMicros(pid) - cpu0;
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.non2xx + r.timeouts,
    cpuPerRequest: cpu / Math.max(1, r.requests.total),
  };
}

/** Alternates baseline and service runs; returns medians of each. */
async function compare(name: string, baseline: () => Promise<LoadResult>, service: () => Promise<LoadResult>) {
  const b: LoadResult[] = [];
  const s: LoadResult[] = [];
  await baseline(); // warm-up for both paths
  await service();
  for (let i = 0; i < ROUNDS; i++) {
    if (i % 2 === 0) {
      b.push(await baseline());
      s.push(await service());
    } else {
      s.push(await service());
      b.push(await baseline());
    }
  }
  const m = (xs: LoadResult[]) => ({
    rps: median(xs.map((x) => x.rps)),
    p50: median(xs.map((x) => x.p50)),
    p99: median(xs.map((x) => x.p99)),
    errors: xs.reduce((n, x) => n + x.errors, 0),
    cpuPerRequest: median(xs.map((x) => x.cpuPerRequest)),
  });
  const res = { name, baseline: m(b), service: m(s) };
  console.error(
    `  ${name}: service ${res.service.rps.toFixed(0)} req/s p99 ${res.service.p99} ms | baseline ${res.baseline.rps.toFixed(0)} req/s p99 ${res.baseline.p99} ms`,
  );
  return res;
}

async function transfer(kind: 'download' | 'upload', url: string, headers: Record<string, string>, pid?: number) {
  const before = pid ? rssKb(pid) : 0;
  let peak = before;
  const sampler = pid ? setInterval(() => (peak = Math.max(peak, rssKb(pid))), 20) : undefined;
  const start = performance.now();
  const bytes = await new Promise<number>((resolve, reject) => {
    const u = new URL(url);
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: `${u.pathname}${u.search}`,
        method: kind === 'download' ? 'GET' : 'POST',
        headers:
          kind === 'upload'
            ? { ...headers, 'content-type': 'application/octet-stream', 'content-length': String(STREAM_BYTES) }
            : headers,
      },
      (res) => {
        let n = 0;
        const answer: Buffer[] = [];
        res.on('data', (c: Buffer) => {
          n += c.length;
          if (kind === 'upload') answer.push(c);
        });
        res.on('end', () =>
          resolve(
            kind === 'download' ? n : (JSON.parse(Buffer.concat(answer).toString()) as { received: number }).received,
          ),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (kind === 'upload') {
      const chunk = Buffer.alloc(64 * 1024, 98);
      let sent = 0;
      const write = () => {
        while (sent < STREAM_BYTES) {
          const n = Math.min(chunk.length, STREAM_BYTES - sent);
          sent += n;
          if (!req.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void req.once('drain', write);
        }
        req.end();
      };
      write();
    } else req.end();
  });
  if (bytes !== STREAM_BYTES) throw new Error(`${kind} through ${url} moved ${bytes} bytes, expected ${STREAM_BYTES}`);
  const seconds = (performance.now() - start) / 1000;
  if (sampler) clearInterval(sampler);
  if (pid) peak = Math.max(peak, rssKb(pid));
  return { mbps: bytes / 1024 / 1024 / seconds, rssGrowthMb: (peak - before) / 1024, bytes };
}

async function dryRunMicros(): Promise<{ read: number; write: number }> {
  const { loadConfig } = await import('../runtime/config.ts');
  const { createServices } = await import('../runtime/services.ts');
  const { Management } = await import('../runtime/management.ts');
  const dir = mkdtempSync(join(os.tmpdir(), 'acs-bench-dry-'));
  const s = await createServices(loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'warn' }));
  const m = new Management(s);
  await m.createConnection({ connection_name: 'helpdesk', connector: 'helpdesk' });
  await m.upsertAccount('helpdesk', 'u', {
    domain: 'acme.zendesk.com',
    email: 'a@acme.com',
    api_token: 'x'.repeat(20),
  });
  await m.createConnection({ connection_name: 'mail', connector: 'mail', client_id: 'c', client_secret: 's' });
  await m.upsertAccount('mail', 'u', { access_token: 'a', refresh_token: 'r', expires_in: 3600 });
  const measure = async (toolName: string, input: () => Record<string, unknown>, connectionName: string) => {
    const run = () =>
      s.executor.execute({ toolName, input: input(), dryRun: true, account: { connectionName, identifier: 'u' } });
    for (let i = 0; i < 2000; i++) await run();
    const batches: number[] = [];
    for (let b = 0; b < 5; b++) {
      const n = 5000;
      const t = process.hrtime.bigint();
      for (let i = 0; i < n; i++) await run();
      batches.push(Number(process.hrtime.bigint() - t) / 1000 / n);
    }
    return median(batches);
  };
  const read = await measure('helpdesk_ticket_get', () => ({ ticket_id: 123, include: 'users' }), 'helpdesk');
  const write = await measure(
    'mail_send_message',
    () => ({
      toRecipients: ['a@x.com', 'b@x.com'],
      ccRecipients: ['c@x.com'],
      subject: 'Hi',
      body: '<b>Hello</b>',
      bodyType: 'HTML',
      saveToSentItems: false,
    }),
    'mail',
  );
  await s.close();
  rmSync(dir, { recursive: true, force: true });
  return { read, write };
}

async function main() {
  const t0 = performance.now();
  const upPort = await freePort();
  const barePort = await freePort();
  const upstreamUrl = `http://127.0.0.1:${upPort}`;
  const bareUrl = `http://127.0.0.1:${barePort}`;
  const procs: ChildProcess[] = [
    child(['bench/upstream.ts', 'upstream', String(upPort)]),
    child(['bench/upstream.ts', 'bare', String(barePort), upstreamUrl]),
  ];
  await Promise.all(procs.map((p) => new Promise((r) => p.once('message', r))));

  console.error('cold start and idle memory');
  const coldStarts: number[] = [];
  const idle: number[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const dataDir = mkdtempSync(join(os.tmpdir(), 'acs-cold-'));
    const started = performance.now();
    const p = child(['runtime/main.ts'], {
      PORT: String(port),
      DATA_DIR: dataDir,
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: 'warn',
    });
    await waitHealthy(`http://127.0.0.1:${port}`);
    coldStarts.push(performance.now() - started);
    await sleep(500);
    idle.push(rssKb(p.pid!) / 1024);
    p.kill('SIGTERM');
    await new Promise((r) => p.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
  }

  const svc = await startService(upstreamUrl);
  procs.push(svc.proc);
  const auth = { authorization: `Bearer ${svc.token}` };
  const svcPid = svc.proc.pid!;
  const barePid = procs[1]!.pid!;
  const proxyHeaders = { ...auth, connection_name: 'helpdesk', identifier: 'bench' };
  const small = JSON.stringify({ ticket: { comment: { body: 'x'.repeat(10 * 1024 - 40) } } });
  const sendMail = {
    toRecipients: ['a@x.com', 'b@x.com'],
    ccRecipients: ['c@x.com'],
    subject: 'Hi',
    body: '<b>Hello</b>',
    bodyType: 'HTML',
    saveToSentItems: false,
  };
  const graphBody = JSON.stringify({
    message: {
      subject: 'Hi',
      body: { contentType: 'HTML', content: '<b>Hello</b>' },
      toRecipients: [{ emailAddress: { address: 'a@x.com' } }, { emailAddress: { address: 'b@x.com' } }],
      ccRecipients: [{ emailAddress: { address: 'c@x.com' } }],
    },
    saveToSentItems: false,
  });

  console.error('load (alternating runs, medians)');
  const rows = [];
  rows.push(
    await compare(
      'proxy GET',
      () => load({ url: `${bareUrl}/desks/acme.zendesk.com/api/v2/tickets/1` }, barePid),
      () => load({ url: `${svc.url}/proxy/v2/tickets/1`, headers: proxyHeaders }, svcPid),
    ),
  );
  rows.push(
    await compare(
      'proxy POST 10 KB',
      () =>
        load(
          {
            url: `${bareUrl}/desks/acme.zendesk.com/api/v2/tickets`,
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: small,
          },
          barePid,
        ),
      () =>
        load(
          {
            url: `${svc.url}/proxy/v2/tickets`,
            method: 'POST',
            headers: { ...proxyHeaders, 'content-type': 'application/json' },
            body: small,
          },
          svcPid,
        ),
    ),
  );
  const exec = (body: unknown) => ({
    url: `${svc.url}/v1/tools/execute`,
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  rows.push(
    await compare(
      'tool read (helpdesk_ticket_get)',
      () => load({ url: `${bareUrl}/desks/acme.zendesk.com/api/v2/tickets/123?include=users` }, barePid),
      () =>
        load(
          exec({
            tool_name: 'helpdesk_ticket_get',
            connection_name: 'helpdesk',
            identifier: 'bench',
            tool_input: { ticket_id: 123, include: 'users' },
          }),
          svcPid,
        ),
    ),
  );
  rows.push(
    await compare(
      'tool write (mail_send_message)',
      () =>
        load(
          {
            url: `${bareUrl}/v1.0/me/sendMail`,
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: graphBody,
          },
          barePid,
        ),
      () =>
        load(
          exec({ tool_name: 'mail_send_message', connection_name: 'mail', identifier: 'bench', tool_input: sendMail }),
          svcPid,
        ),
    ),
  );

  console.error('token refresh under load: 500 concurrent calls on an expired token');
  await svc.client.upsertConnectedAccount({
    connectionName: 'mail',
    identifier: 'expired',
    credentials: {
      access_token: 'old',
      refresh_token: 'old-refresh',
      expires_at: new Date(Date.now() - 60_000).toISOString(),
    },
  });
  const refreshBefore = ((await (await fetch(`${upstreamUrl}/stats`)).json()) as { refreshes: number }).refreshes;
  const latencies: number[] = [];
  let refreshErrors = 0;
  await Promise.all(
    Array.from({ length: 500 }, async () => {
      const t = performance.now();
      const res = await fetch(
        `${svc.url}/v1/tools/execute`,
        exec({
          tool_name: 'mail_mailbox_settings_get',
          connection_name: 'mail',
          identifier: 'expired',
          tool_input: {},
        }) as RequestInit,
      );
      await res.arrayBuffer();
      if (!res.ok) refreshErrors++;
      latencies.push(performance.now() - t);
    }),
  );
  const refreshes =
    ((await (await fetch(`${upstreamUrl}/stats`)).json()) as { refreshes: number }).refreshes - refreshBefore;
  latencies.sort((a, b) => a - b);
  const refreshP99 = latencies[Math.floor(latencies.length * 0.99) - 1]!;

  console.error(`streaming ${STREAM_BYTES / 1024 / 1024} MB each way`);
  const stream = {
    service: { download: [] as number[], upload: [] as number[], rss: [] as number[] },
    baseline: { download: [] as number[], upload: [] as number[] },
  };
  for (let i = 0; i < 2; i++) {
    stream.baseline.download.push((await transfer('download', `${bareUrl}/big?bytes=${STREAM_BYTES}`, {})).mbps);
    const d = await transfer('download', `${svc.url}/proxy/big?bytes=${STREAM_BYTES}`, proxyHeaders, svc.proc.pid);
    stream.service.download.push(d.mbps);
    stream.service.rss.push(d.rssGrowthMb);
    stream.baseline.upload.push((await transfer('upload', `${bareUrl}/upload`, {})).mbps);
    const u = await transfer('upload', `${svc.url}/proxy/upload`, proxyHeaders, svc.proc.pid);
    stream.service.upload.push(u.mbps);
    stream.service.rss.push(u.rssGrowthMb);
  }

  console.error('dry run (in process: validation, mapping and account lookup)');
  const dry = await dryRunMicros();

  console.error('generate');
  const { generate } = await import('../generator/main.ts');
  const genTimes: number[] = [];
  for (let i = 0; i < 2; i++) {
    const t = performance.now();
    const g = await generate();
    genTimes.push(performance.now() - t);
    if (i === 0) console.error(`  ${g.connectors.length} connectors, ${g.toolCount} tools`);
  }

  for (const p of procs) p.kill('SIGTERM');
  rmSync(svc.dataDir, { recursive: true, force: true });

  const ratio = (a: number, b: number) => a / b;
  const fmt = (n: number, d = 0) => n.toFixed(d);
  const table: string[][] = [['Measure', 'Service', 'Baseline', 'Ratio', 'Target', 'Met']];
  const row = (m: string, s: string, b: string, r: string, target: string, met: boolean | string) =>
    table.push([m, s, b, r, target, typeof met === 'string' ? met : met ? 'yes' : 'NO']);
  for (const r of rows) {
    const tput = ratio(r.service.rps, r.baseline.rps);
    const p99 = ratio(r.service.p99, Math.max(r.baseline.p99, 1));
    const isProxy = r.name.startsWith('proxy');
    row(
      `${r.name}: throughput (req/s)`,
      fmt(r.service.rps),
      fmt(r.baseline.rps),
      fmt(tput, 2),
      isProxy ? '≥ 0.5' : '≥ 0.4',
      tput >= (isProxy ? 0.5 : 0.4),
    );
    row(
      `${r.name}: latency p50 / p99 (ms)`,
      `${r.service.p50} / ${r.service.p99}`,
      `${r.baseline.p50} / ${r.baseline.p99}`,
      fmt(p99, 2),
      isProxy ? 'p99 ≤ 2×' : '—',
      isProxy ? p99 <= 2 : '—',
    );
    row(
      `${r.name}: CPU per request (µs), service / bare process`,
      fmt(r.service.cpuPerRequest),
      fmt(r.baseline.cpuPerRequest),
      fmt(ratio(r.service.cpuPerRequest, r.baseline.cpuPerRequest), 2),
      '—',
      '—',
    );
    if (r.service.errors || r.baseline.errors)
      row(`${r.name}: errors`, String(r.service.errors), String(r.baseline.errors), '', '0', r.service.errors === 0);
  }
  row('dry run helpdesk_ticket_get (µs/call, median)', fmt(dry.read, 1), '—', '—', '≤ 50', dry.read <= 50);
  row('dry run mail_send_message (µs/call, median)', fmt(dry.write, 1), '—', '—', '≤ 50', dry.write <= 50);
  row(
    'refresh: requests for 500 concurrent calls on an expired token',
    String(refreshes),
    '—',
    '—',
    'exactly 1',
    refreshes === 1 && refreshErrors === 0,
  );
  row('refresh: p99 of those calls (ms)', fmt(refreshP99), '—', '—', '—', '—');
  const dl = median(stream.service.download);
  const ul = median(stream.service.upload);
  const bdl = median(stream.baseline.download);
  const bul = median(stream.baseline.upload);
  const rss = Math.max(...stream.service.rss);
  row(
    `proxy download ${STREAM_BYTES >> 20} MB (MB/s)`,
    fmt(dl),
    fmt(bdl),
    fmt(ratio(dl, bdl), 2),
    '≥ 0.8',
    ratio(dl, bdl) >= 0.8,
  );
  row(
    `proxy upload ${STREAM_BYTES >> 20} MB (MB/s)`,
    fmt(ul),
    fmt(bul),
    fmt(ratio(ul, bul), 2),
    '≥ 0.8',
    ratio(ul, bul) >= 0.8,
  );
  row('service peak RSS growth while streaming (MB)', fmt(rss, 1), '—', '—', '< 50', rss < 50);
  row('cold start to first /health (ms, median of 3)', fmt(median(coldStarts)), '—', '—', '—', '—');
  row('idle RSS (MB)', fmt(median(idle), 1), '—', '—', '—', '—');
  row('generate, all connectors (ms)', fmt(median(genTimes)), '—', '—', '—', '—');

  const widths = table[0]!.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
  const md = table
    .map(
      (r, i) =>
        `| ${r.map((c, j) => c.padEnd(widths[j]!)).join(' | ')} |${i === 0 ? `\n|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|` : ''}`,
    )
    .join('\n');
  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}`;
  console.log(
    `\nAgent connector service vs bare node:http pass-through — ${new Date().toISOString()}\nMachine: ${machine}\nLoad: ${CONNECTIONS} connections, ${DURATION} s runs, median of ${ROUNDS} alternating rounds\n\n${md}\n`,
  );
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  writeFileSync(
    join(ROOT, `bench/results/${stamp}.json`),
    JSON.stringify(
      { machine, rows, dry, refreshes, refreshErrors, refreshP99, stream, coldStarts, idle, genTimes },
      null,
      2,
    ),
  );
  writeFileSync(join(ROOT, 'bench/results/latest.md'), `Machine: ${machine}\n\n${md}\n`);
  console.error(`done in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  process.exit(0);
}

await main();
