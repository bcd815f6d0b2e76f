/**
 * Trigger engine bench (issue 41): N polling instances (`callintel_call_created`, one connected account each) on
 * the fake Gong. The fake and the webhook receiver run in a child process of their own, so that this process's CPU
 * is the service's alone and the receiver answers however busy the service is (in the service's process, its
 * answers waited behind the service's work until deliveries timed out). Reports the service's CPU per 1,000 polls
 * over a steady window (polls and the deliveries they cause), whether the poller kept up with the instances'
 * interval, and, for calls added to the fake while it runs, the delay from the call's creation to its delivery at
 * the receiver (p50, p99, over every instance; a poll finds a call on average half an interval after it appears),
 * with what became of the deliveries (by status and last error). Each instance watches one of N / 100 workspaces
 * (its `workspace_id` config, which the fake filters on), and each call added goes to one workspace in turn: a call
 * is an event for 100 instances, so that the deliveries measured stay within what the webhook path can carry while
 * the poller works through all N.
 *
 * Run: npx tsx bench/triggers.ts [instances=10000] [interval_seconds=30] [window_seconds=60]
 *      (the child: npx tsx bench/triggers.ts --fake)
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { FakeGong, U_REP, WS_SALES } from '../test/fakes/gong.ts';

const KEY = 'QWERTY1234567890';
const SECRET = 'gong-secret-bench-1a2b3c';

if (process.argv[2] === '--fake') {
  // The fake provider and the receiver. Told on stdin: `add <workspace>` adds a call (printing its id and time), `count` prints
  // the events received so far, `report` prints when each arrived, by webhook-id.
  const gong = await new FakeGong({ accessKey: KEY, accessKeySecret: SECRET, pageSize: 100 }).start();
  const arrivals = new Map<string, number>();
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrivals.set(String(req.headers['webhook-id']), Date.now());
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/in`;
  console.log(JSON.stringify({ url: gong.url, receiverUrl }));
  let n = 0;
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'count') {
      console.log(JSON.stringify({ count: arrivals.size }));
      continue;
    }
    if (line === 'report') {
      console.log(JSON.stringify({ arrivals: [...arrivals] }));
      continue;
    }
    const at = Date.now();
    const id = `99${String(at).slice(-9)}${String(n++).padStart(4, '0')}`;
    gong.calls.set(id, {
      id,
      workspaceId: line.split(' ')[1] ?? WS_SALES,
      title: `Bench call ${n}`,
      started: new Date(at).toISOString(),
      duration: 60,
      direction: 'Inbound',
      primaryUserId: U_REP,
      parties: [],
      topics: [],
      trackers: [],
      transcript: [],
    });
    gong.requests.length = 0;
    console.log(JSON.stringify({ id, at }));
  }
  process.exit(0);
}

const N = Number(process.argv[2] ?? 10_000);
const INTERVAL = Number(process.argv[3] ?? 30);
const WINDOW = Number(process.argv[4] ?? 60);

const { loadConfig } = await import('../runtime/config.ts');
const { startServer } = await import('../runtime/server.ts');
const { serviceEnv } = await import('../test/helpers/harness.ts');
const { newId, newSortableId } = await import('../runtime/ids.ts');
const { pendingAccount } = await import('../runtime/store/types.ts');

const fake = spawn(process.execPath, ['--import', 'tsx', 'bench/triggers.ts', '--fake'], {
  stdio: ['pipe', 'pipe', 'inherit'],
});
const lines = createInterface({ input: fake.stdout });
const next = (): Promise<Record<string, unknown>> =>
  new Promise((resolve) => lines.once('line', (l) => resolve(JSON.parse(l) as Record<string, unknown>)));
const started = await next();
const gongUrl = String(started.url);
const ask = async (what: string) => {
  fake.stdin.write(`${what}\n`);
  return next();
};

const dataDir = mkdtempSync(join(tmpdir(), 'acs-bench-triggers-'));
const config = loadConfig({
  ...serviceEnv(dataDir),
  LOG_LEVEL: 'warn',
  WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
  TRIGGER_MIN_INTERVAL_SECONDS: '1',
  TRIGGER_CONCURRENCY: '64',
  TRIGGER_PROVIDER_CONCURRENCY: '64',
});
const running = await startServer(config);
const s = running.services;
const now = Date.now();
const connectionId = newId('conn');
await s.store.createConnection({
  id: connectionId,
  name: 'gong',
  connector: 'callintel',
  authKind: 'api_key',
  clientId: null,
  clientSecretSealed: null,
  scopes: [],
  apiBaseUrl: gongUrl,
  apiHosts: {},
  oauth: {},
  registrationSealed: null,
  createdAt: now,
  updatedAt: now,
});
const accounts = Array.from({ length: N }, (_, i) => {
  const a = pendingAccount(newSortableId('ca'), connectionId, `user-${i}`, now);
  return {
    ...a,
    status: 'ACTIVE' as const,
    secretsSealed: s.accounts.sealSecrets(a.id, { access_key: KEY, access_key_secret: SECRET }),
  };
});
await s.store.insertAccounts(accounts);
const { endpoint } = await s.webhooks.create(String(started.receiverUrl), ['trigger.callintel_call_created']);
const PER_WORKSPACE = 100;
const WORKSPACES = Math.max(1, Math.ceil(N / PER_WORKSPACE));
const workspaceOf = (i: number) => String(7_100_000_000 + (i % WORKSPACES));
// Instances as POST /v1/triggers makes them (a since feed starts at its creation), spread over one interval.
const intervalMs = INTERVAL * 1000;
await s.store.transaction(async (tx) => {
  for (const [i, a] of accounts.entries()) {
    await tx.createTriggerInstance({
      id: newId('trg'),
      trigger: 'callintel_call_created',
      connector: 'callintel',
      kind: 'polling',
      connectionId,
      accountId: a.id,
      config: { workspace_id: workspaceOf(i) },
      status: 'active',
      intervalMs,
      state: { newest: now, seen: [] },
      secretSealed: null,
      nextRunAt: now + Math.floor(Math.random() * intervalMs),
      leaseOwner: null,
      leaseUntil: null,
      failures: 0,
      eventsSent: 0,
      lastEventAt: null,
      lastPollAt: null,
      lastError: null,
      lastErrorAt: null,
      createdAt: now,
      updatedAt: now,
    });
  }
});
console.log(`${N} instances, interval ${INTERVAL} s; warming up for one interval`);
await new Promise((r) => setTimeout(r, intervalMs));

// CPU per 1,000 polls over the window; calls added to the fake every 5 s during it.
const polls0 = s.poller.counters.polls;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const added: Array<{ id: string; at: number; workspace: string }> = [];
const adder = setInterval(() => {
  const workspace = workspaceOf(added.length);
  void ask(`add ${workspace}`).then((m) => added.push({ id: String(m.id), at: Number(m.at), workspace }));
}, 5_000);
await new Promise((r) => setTimeout(r, WINDOW * 1000));
clearInterval(adder);
const cpu = process.cpuUsage(cpu0);
const polls = s.poller.counters.polls - polls0;
const seconds = (performance.now() - t0) / 1000;
const cpuMs = (cpu.user + cpu.system) / 1000;
// Every instance finds every call within an interval; then the deliveries drain.
const rows = await s.store.listTriggerInstances({ limit: N });
const watching = (c: { workspace: string }) => rows.filter((t) => t.config.workspace_id === c.workspace);
const expected = added.reduce((n, c) => n + watching(c).length, 0);
const deadline = Date.now() + intervalMs * 2 + 120_000;
while (Number((await ask('count')).count) < expected && Date.now() < deadline)
  await new Promise((r) => setTimeout(r, 1_000));
const arrivals = new Map((await ask('report')).arrivals as Array<[string, number]>);

// Delay per (instance, call): the call's creation in the fake to the event's arrival at the receiver.
const { itemEventId } = await import('../runtime/triggers/events.ts');
const delays: number[] = [];
for (const c of added)
  for (const t of watching(c)) {
    const got = arrivals.get(itemEventId(t.id, c.id));
    if (got !== undefined) delays.push(got - c.at);
  }
delays.sort((a, b) => a - b);
// What became of the deliveries: by status, HTTP status and last error (a delivery failing shows here).
const outcomes = new Map<string, number>();
for (let before: { createdAt: number; id: string } | undefined, more = true; more;) {
  const page = await s.store.listWebhookDeliveries(endpoint.id, 1_000, before);
  for (const d of page) {
    const k = [d.status, d.lastStatus ?? 'no answer', d.lastError ?? ''].join(' ').trim().slice(0, 160);
    outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
  }
  more = page.length === 1_000;
  if (more) before = { createdAt: page.at(-1)!.createdAt, id: page.at(-1)!.id };
}
const q = (p: number) => delays[Math.min(delays.length - 1, Math.floor(p * delays.length))] ?? NaN;
console.log(
  JSON.stringify(
    {
      instances: N,
      interval_seconds: INTERVAL,
      window_seconds: Math.round(seconds),
      polls,
      polls_per_second: Math.round(polls / seconds),
      // The instances' interval asks for N / interval polls a second: fewer means the poller fell behind (and the
      // delays then grow with the run, not a steady figure).
      polls_per_second_needed: Math.round(N / INTERVAL),
      kept_up: polls / seconds >= 0.95 * (N / INTERVAL),
      cpu_ms_per_1000_polls: Math.round((cpuMs / polls) * 1000),
      calls_added: added.length,
      events_expected: expected,
      events_delivered: delays.length,
      delay_ms_p50: q(0.5),
      delay_ms_p99: q(0.99),
      poll_failures: s.poller.counters.failures,
      deliveries: Object.fromEntries([...outcomes].sort((a, b) => b[1] - a[1])),
    },
    null,
    2,
  ),
);
await running.close();
fake.kill();
rmSync(dataDir, { recursive: true, force: true });
process.exit(0);
