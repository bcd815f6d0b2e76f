/**
 * Sign-in bursts (issue 12, points 1 and 2): concurrent wrong passwords must be counted before the slow
 * password hash (so they cannot all slip past the block), and a burst of unauthenticated sign-ins from many
 * addresses must not starve calls to real providers (each attempt is a 32 MiB scrypt in libuv's thread pool,
 * where `dns.lookup` also waits). The provider here is reached by name (`localhost`) on a fresh connection
 * per call, so every tool call resolves a name while the burst runs.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';
import { record } from './summary.ts';

const ADMIN_PASSWORD = 'burst-admin-password-5f2c';
let h: Harness;
let provider: http.Server;

beforeAll(async () => {
  h = await startHarness({ env: { ADMIN_PASSWORD, TRUST_PROXY: '1', LOG_LEVEL: 'warn' } });
  // A provider that closes every connection: each tool call opens a new socket, so each one looks its name up.
  provider = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
    res.end('{"items": []}');
  });
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  const port = (provider.address() as AddressInfo).port;
  await h.client.createConnection({
    connection_name: 'data',
    connector: 'prodata',
    api_base_url: `http://localhost:${port}`,
  });
  await h.client.upsertConnectedAccount({ connectionName: 'data', identifier: 'u', credentials: { api_key: 'k-1' } });
});
afterAll(async () => {
  await new Promise((resolve) => provider?.close(resolve));
  await h?.close();
});

/** One sign-in attempt with its own form cookie, from `from` (X-Forwarded-For: the service trusts the proxy). */
async function signInAttempt(form: { cookie: string; csrf: string }, username: string, password: string, from: string) {
  const res = await fetch(`${h.url}/dashboard/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: form.cookie,
      'x-forwarded-for': from,
    },
    body: new URLSearchParams({ _csrf: form.csrf, username, password, next: '/dashboard/connections' }),
  });
  await res.arrayBuffer();
  return { status: res.status, retryAfter: res.headers.get('retry-after') };
}

async function signInForm(): Promise<{ cookie: string; csrf: string }> {
  const c = new DashboardClient(h.url);
  const page = await c.get('/dashboard/sign-in');
  return { cookie: c.cookieHeader(), csrf: DashboardClient.csrf(page.html) };
}

async function toolCall(): Promise<number> {
  const started = performance.now();
  await h.client.executeTool({
    toolName: 'prodata_search_people',
    connectionName: 'data',
    identifier: 'u',
    toolInput: { search: 'x' },
  } as never);
  return performance.now() - started;
}

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.ceil((p / 100) * xs.length) - 1]!;

describe('concurrent wrong passwords for one user from one address', () => {
  // The right password is sent after the burst, not inside it: sent with 60 others at once, whether it is checked
  // depends on which requests the server takes first (among the first six checked it is rightly accepted), so a
  // test of it would depend on the order of arrival.
  it('are counted before the hash: at most the free attempts are checked, then the right password is refused', async () => {
    const form = await signInForm();
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => signInAttempt(form, 'admin', `wrong-${i}-xxxxxxxx`, '203.0.113.7')),
    );
    const statuses = results.map((r) => r.status);
    const checkedAtOnce = statuses.filter((s) => s === 401).length;
    // The burst may have been cut short by the hashing bound; one at a time, wrong passwords are checked until the
    // sixth in all, and the next is refused unchecked. (The sixth starts a block of 1 s, counted from before its
    // hash: on a machine so loaded that the hash outlasts it, a seventh is checked, and starts a block of 2 s.)
    let checked = checkedAtOnce;
    let refused: Awaited<ReturnType<typeof signInAttempt>> | undefined;
    let oneAtATime = 0;
    for (let i = 0; i < 10 && !refused; i++, oneAtATime++) {
      const r = await signInAttempt(form, 'admin', `slow-${i}-xxxxxxxx`, '203.0.113.7');
      if (r.status === 401) checked++;
      else refused = r;
    }
    const right = await signInAttempt(form, 'admin', ADMIN_PASSWORD, '203.0.113.7');
    record({
      category: 'sign-in bursts',
      what: '60 wrong passwords at once for one user, more one at a time, then the right one',
      tried: results.length + oneAtATime + 1,
      failed: (checked < 6 || checked > 7 ? 1 : 0) + (right.status !== 429 ? 1 : 0),
      detail: `${checkedAtOnce} checked at once, ${checked} in all, right password ${right.status}`,
    });
    // Sequentially the sixth wrong password is the last one checked; at once, no more than that.
    expect(checkedAtOnce).toBeLessThanOrEqual(6);
    expect(statuses.every((s) => s === 401 || s === 429 || s === 503)).toBe(true);
    expect(checked).toBeGreaterThanOrEqual(6);
    expect(checked).toBeLessThanOrEqual(7);
    expect(refused?.status).toBe(429);
    expect(right.status).toBe(429);
    for (const r of [...results, refused!, right]) {
      if (r.status === 429 || r.status === 503) expect(Number(r.retryAfter)).toBeGreaterThan(0);
    }
  });
});

describe('an unauthenticated sign-in burst from many addresses', () => {
  /**
   * Tool calls to a provider reached by name, run one after another while `burst` is under way (at least 10).
   */
  async function callsDuring<T>(burst: () => Promise<T>): Promise<{ latencies: number[]; result: T }> {
    let done = false;
    const running = burst().finally(() => (done = true));
    const latencies: number[] = [];
    while (!done || latencies.length < 10) latencies.push(await toolCall());
    return { latencies, result: await running };
  }

  const burstOf = (form: { cookie: string; csrf: string }) => () =>
    Promise.all(
      Array.from({ length: 150 }, (_, i) =>
        signInAttempt(form, `user-${i}`, `guess-${i}-xxxxxxxx`, `198.51.100.${i % 250}`),
      ),
    );

  // The bound, stated relative to what any 150 unauthenticated requests cost (the machine the suite runs on may
  // be busy, so absolute times vary): the same 150 sign-in POSTs with a form token that does not match (refused
  // before any password is looked at) are the control. With sign-ins that are checked, the slowest tool call
  // must stay within twice the control's slowest plus one second, and the median within three times the quiet
  // median plus 200 ms. Before the fix, the hashes held libuv's pool and every call waited for its DNS lookup
  // behind them: tool calls of 10 s and more (the issue saw 21 s with 60–80 sign-ins).
  it('keeps tool calls to a named provider within the stated bound while 150 sign-ins arrive at once', async () => {
    for (let i = 0; i < 3; i++) await toolCall(); // warm up (connection, compiled paths)
    const quiet: number[] = [];
    for (let i = 0; i < 10; i++) quiet.push(await toolCall());

    const form = await signInForm();
    const control = await callsDuring(burstOf({ cookie: form.cookie, csrf: `${form.csrf}x` }));
    expect(new Set(control.result.map((r) => r.status))).toEqual(new Set([403]));
    const { latencies: during, result: results } = await callsDuring(burstOf(form));

    const statuses = new Map<number, number>();
    for (const r of results) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    const worst = Math.max(...during);
    const maxBound = 2 * Math.max(...control.latencies) + 1000;
    const medianBound = 3 * percentile(quiet, 50) + 200;
    const ms = (x: number) => `${x.toFixed(0)} ms`;
    record({
      category: 'sign-in bursts',
      what: '150 unauthenticated sign-ins while tool calls run',
      tried: results.length + during.length,
      failed: worst > maxBound || percentile(during, 50) > medianBound ? 1 : 0,
      detail:
        `tool call p50 ${ms(percentile(quiet, 50))} quiet; during 150 refused forms p50 ${ms(percentile(control.latencies, 50))} max ${ms(Math.max(...control.latencies))}; ` +
        `during 150 sign-ins p50 ${ms(percentile(during, 50))} max ${ms(worst)} (${during.length} calls); sign-ins ${[...statuses].map(([s, n]) => `${n}×${s}`).join(', ')}`,
    });
    // Every sign-in got an answer: checked (401), or refused at once with a time to come back (503 or 429).
    for (const r of results) {
      expect([401, 429, 503]).toContain(r.status);
      if (r.status !== 401) expect(Number(r.retryAfter)).toBeGreaterThan(0);
    }
    expect(worst).toBeLessThanOrEqual(maxBound);
    expect(percentile(during, 50)).toBeLessThanOrEqual(medianBound);
  });
});
