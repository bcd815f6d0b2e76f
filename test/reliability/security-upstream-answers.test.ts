/**
 * Provider answers that are too large or break off (issue 12, point 9), through a real support-desk connection
 * whose provider is test/fakes/faulty-upstream.ts:
 * - an answer whose Content-Length exceeds TOOL_RESPONSE_LIMIT_BYTES is refused when its headers arrive, naming the
 *   limit, without reading the body (the fake sends the headers and holds the body back: on main the call waited
 *   for the response timeout instead, 504, retried three times for a GET);
 * - a chunked answer (no length announced) is still cut once the limit is read;
 * - an answer cut short of its Content-Length, or one that stops after its headers, is one exchange (the fake counts
 *   the requests), a 502/504 saying so, not retried three times (on main: three requests).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultyUpstream } from '../fakes/faulty-upstream.ts';
import { serviceToken, startHarness, type Harness } from '../helpers/harness.ts';
import { record } from './summary.ts';

const MB = 1024 * 1024;
const LIMIT = 32 * MB;
// Long enough to read the 32 MB limit on a loaded machine (the deadline for a whole answer is twice this).
const TIMEOUT_CAP_MS = 5000;

let h: Harness;
let up: FaultyUpstream;
let token: string;
const outcomes: string[] = [];
let tried = 0;
let failed = 0;

beforeAll(async () => {
  h = await startHarness({
    env: { TOOL_RESPONSE_LIMIT_BYTES: String(LIMIT), UPSTREAM_TIMEOUT_MAX_MS: String(TIMEOUT_CAP_MS) },
  });
  up = await new FaultyUpstream().start();
  await h.client.createConnection({ connection_name: 'faulty', connector: 'helpdesk', api_base_url: `${up.url}/api` });
  await h.client.upsertConnectedAccount({
    connectionName: 'faulty',
    identifier: 'user-1',
    credentials: { domain: 'acme.zendesk.com', email: 'agent@acme.com', api_token: 'zd-answers-token-81c4e2' },
  });
  token = await serviceToken(h.url);
});

afterAll(async () => {
  record({
    category: 'faults injected',
    what: 'provider answers over the size limit or cut short (refused at the headers, not retried)',
    tried,
    failed,
    detail: outcomes.join('; '),
  });
  await up?.close();
  await h?.close();
});

/** An `it` counted in the reliability summary; the provider's script and counters start empty. */
function scenario(name: string, fn: () => Promise<void>) {
  it(name, async ({ onTestFailed }) => {
    tried++;
    onTestFailed(() => void failed++);
    up.reset();
    await fn();
  });
}

interface Answer {
  status: number;
  source: string | null;
  error: { code: string; message: string };
  ms: number;
}

/** helpdesk_ticket_get: a GET, which the retry policy would retry on a network failure. */
async function getTicket(): Promise<Answer> {
  const started = performance.now();
  const res = await fetch(`${h.url}/v1/tools/execute`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      tool_name: 'helpdesk_ticket_get',
      connection_name: 'faulty',
      identifier: 'user-1',
      tool_input: { ticket_id: 42 },
    }),
  });
  const body = (await res.json()) as { error: Answer['error'] };
  return {
    status: res.status,
    source: res.headers.get('x-error-source'),
    error: body.error,
    ms: performance.now() - started,
  };
}

describe('an answer larger than TOOL_RESPONSE_LIMIT_BYTES', () => {
  scenario('announced by Content-Length: refused at the headers, naming the limit, the body never read', async () => {
    // Only the headers come; the body is held back. Refusing must not wait for it.
    up.plan([], { kind: 'stall', bytes: 0, contentLength: LIMIT + 1 });
    const a = await getTicket();
    expect(a.status, a.error.message).toBe(502);
    expect(a.source).toBe('service');
    expect(a.error.code).toBe('response_too_large');
    expect(a.error.message).toContain(`larger than ${LIMIT} bytes`);
    expect(a.error.message).toContain('TOOL_RESPONSE_LIMIT_BYTES');
    expect(a.error.message).toContain(`its Content-Length says ${LIMIT + 1} bytes`);
    expect(up.count('GET')).toBe(1);
    outcomes.push(`Content-Length ${LIMIT + 1} with the body held back: refused in ${a.ms.toFixed(0)} ms`);
  });

  scenario('a 2 GB sized answer: the provider gets to write far less than the limit', async () => {
    up.plan([], { kind: 'huge', bytes: 2048 * MB, contentLength: true });
    const a = await getTicket();
    expect(a.error.code).toBe('response_too_large');
    expect(a.error.message).toContain(`its Content-Length says ${2048 * MB} bytes`);
    // Whatever the sockets buffered before the refusal, not the limit's worth read.
    expect(up.bytesWritten).toBeLessThan(LIMIT / 2);
    expect(up.count('GET')).toBe(1);
    outcomes.push(`2 GB sized: provider wrote ${(up.bytesWritten / MB).toFixed(1)} MB of a ${LIMIT / MB} MB limit`);
  });

  scenario('a chunked 2 GB answer (no length announced): cut once the limit is read', async () => {
    up.plan([], { kind: 'huge', bytes: 2048 * MB, contentLength: false });
    const a = await getTicket();
    expect(a.status).toBe(502);
    expect(a.error.code).toBe('response_too_large');
    expect(a.error.message).toContain(`larger than ${LIMIT} bytes`);
    expect(a.error.message).not.toContain('Content-Length');
    expect(up.bytesWritten).toBeGreaterThan(LIMIT);
    expect(up.bytesWritten).toBeLessThan(2 * LIMIT);
    expect(up.count('GET')).toBe(1);
    outcomes.push(`2 GB chunked: cut after ${(up.bytesWritten / MB).toFixed(1)} MB`);
  });
});

describe('an answer that breaks off after its headers', () => {
  scenario('cut short of its Content-Length (clean close): one request, a 502 saying so', async () => {
    up.plan([], { kind: 'cut_short', bytes: 500, contentLength: 1000 });
    const a = await getTicket();
    expect(up.count('GET')).toBe(1);
    expect(a.status, a.error.message).toBe(502);
    expect(a.source).toBe('service');
    expect(a.error.code).toBe('upstream_connection_reset');
    expect(a.error.message).toContain('cut short after 500 bytes of the 1000 its Content-Length announced');
    expect(a.error.message).toContain('not retried');
    outcomes.push(`cut short: 1 request, answered in ${a.ms.toFixed(0)} ms`);
  });

  scenario('reset in the middle of a chunked body: one request', async () => {
    up.plan([], { kind: 'reset_mid_body', bytes: 1000 });
    const a = await getTicket();
    expect(up.count('GET')).toBe(1);
    expect(a.status).toBe(502);
    expect(a.error.code).toBe('upstream_connection_reset');
    expect(a.error.message).toContain('cut short after');
  });

  scenario('silent after part of the body: one timeout, not three', async () => {
    up.plan([], { kind: 'stall', bytes: 500, contentLength: 1000 });
    const a = await getTicket();
    expect(up.count('GET')).toBe(1);
    expect(a.status).toBe(504);
    expect(a.error.code).toBe('upstream_timeout');
    // The whole-answer deadline ends it: connect + response, both capped (runtime/upstream/got-client.ts, clientFor).
    expect(a.error.message).toContain(`request timeout after ${2 * TIMEOUT_CAP_MS} ms`);
    expect(a.error.message).toContain('after 500 bytes of the 1000');
    outcomes.push(`stalled mid-body: 1 request, answered in ${a.ms.toFixed(0)} ms`);
  });

  scenario('a failure before any answer is still retried for a GET', async () => {
    up.plan([{ kind: 'reset' }], { kind: 'status', status: 200, body: { ticket: { id: 42 } } });
    const started = performance.now();
    const res = await fetch(`${h.url}/v1/tools/execute`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        tool_name: 'helpdesk_ticket_get',
        connection_name: 'faulty',
        identifier: 'user-1',
        tool_input: { ticket_id: 42 },
      }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: unknown }).data).toEqual({ ticket: { id: 42 } });
    expect(up.count('GET')).toBe(2);
    outcomes.push(`reset before the headers: retried, 200 in ${(performance.now() - started).toFixed(0)} ms`);
  });
});
