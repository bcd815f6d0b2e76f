/**
 * GET /metrics (issue 15 point 3): after a tool execution, a failed one, a proxied call and an unknown route, the
 * Prometheus text counts each by route template (never the raw path) and status, the tool executions by tool,
 * connector and outcome, the upstream latency by connector, and the accounts by status; METRICS_TOKEN protects it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { FakeDesk } from '../fakes/desk.ts';

const DOMAIN = 'acme.zendesk.com';
const EMAIL = 'agent@acme.com';
const TOKEN = 'zd-api-token-metrics-1';
const who = { connectionName: 'helpdesk', identifier: 'metrics-user' };

let h: Harness;
let desk: FakeDesk;

/** The value of one sample line, by its exact name and labels as prom-client writes them. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

beforeAll(async () => {
  h = await startHarness();
  desk = await new FakeDesk().start();
  desk.addTenant(DOMAIN, EMAIL, TOKEN);
  await h.client.createConnection({
    connection_name: 'helpdesk',
    connector: 'helpdesk',
    api_base_url: desk.baseUrlTemplate,
  });
  await h.client.upsertConnectedAccount({ ...who, credentials: { domain: DOMAIN, email: EMAIL, api_token: TOKEN } });
  await h.client.getOrCreateConnectedAccount({ connectionName: 'helpdesk', identifier: 'pending-user' });
});
afterAll(async () => {
  await desk?.close();
  await h?.close();
});

describe('GET /metrics', () => {
  it('counts requests by route template, tools by outcome, upstream latency and accounts by status', async () => {
    await h.client.executeTool({ toolName: 'helpdesk_tickets_list', ...who, toolInput: {} });
    await expect(
      h.client.executeTool({ toolName: 'helpdesk_ticket_get', ...who, toolInput: { ticket_id: 987654 } }),
    ).rejects.toThrow();
    await h.client.request({ ...who, path: '/v2/tickets/987654' }).catch(() => undefined);
    await h.client.request({ ...who, path: '/v2/tickets' });
    await fetch(`${h.url}/no/such/route/123`);

    const res = await fetch(`${h.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(sample(text, 'acs_http_requests_total{route="executeTool",status="200"}')).toBe(1);
    expect(sample(text, 'acs_http_requests_total{route="executeTool",status="404"}')).toBe(1);
    expect(sample(text, 'acs_http_requests_total{route="proxy",status="200"}')).toBe(1);
    expect(sample(text, 'acs_http_requests_total{route="proxy",status="404"}')).toBe(1);
    expect(sample(text, 'acs_http_requests_total{route="unmatched",status="404"}')).toBe(1);
    // Route templates only: no raw path or id becomes a label value.
    expect(text).not.toContain('987654');
    expect(text).not.toContain('/no/such/route');
    expect(
      sample(text, 'acs_tool_executions_total{tool="helpdesk_tickets_list",connector="helpdesk",outcome="success"}'),
    ).toBe(1);
    expect(
      sample(
        text,
        'acs_tool_executions_total{tool="helpdesk_ticket_get",connector="helpdesk",outcome="provider_error"}',
      ),
    ).toBe(1);
    expect(sample(text, 'acs_upstream_request_duration_seconds_count{connector="helpdesk",kind="tool"}')).toBe(2);
    expect(sample(text, 'acs_upstream_request_duration_seconds_count{connector="helpdesk",kind="proxy"}')).toBe(2);
    expect(sample(text, 'acs_connected_accounts{status="ACTIVE"}')).toBe(1);
    expect(sample(text, 'acs_connected_accounts{status="PENDING_AUTH"}')).toBe(1);
    expect(text).toContain('# TYPE acs_token_refreshes_total counter');
    expect(text).toContain('# TYPE acs_webhook_deliveries_total counter');
    expect(text).toContain('process_cpu_seconds_total');

    // Counters are totals since start: a second scrape after more calls counts them on top of the first's, and a
    // scrape changes no count (the first scrape's own request is counted by the second).
    await h.client.executeTool({ toolName: 'helpdesk_tickets_list', ...who, toolInput: {} });
    await h.client.executeTool({ toolName: 'helpdesk_tickets_list', ...who, toolInput: {} });
    const again = await (await fetch(`${h.url}/metrics`)).text();
    expect(sample(again, 'acs_http_requests_total{route="executeTool",status="200"}')).toBe(3);
    expect(sample(again, 'acs_http_requests_total{route="executeTool",status="404"}')).toBe(1);
    expect(sample(again, 'acs_http_requests_total{route="metrics",status="200"}')).toBe(1);
    expect(
      sample(again, 'acs_tool_executions_total{tool="helpdesk_tickets_list",connector="helpdesk",outcome="success"}'),
    ).toBe(3);
    expect(
      sample(
        again,
        'acs_tool_executions_total{tool="helpdesk_ticket_get",connector="helpdesk",outcome="provider_error"}',
      ),
    ).toBe(1);
  });

  it('with METRICS_TOKEN, answers only a request that carries it', async () => {
    const secured = await startHarness({ env: { METRICS_TOKEN: 'metrics-token-0123456789' } });
    try {
      const none = await fetch(`${secured.url}/metrics`);
      expect(none.status).toBe(401);
      expect(((await none.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
      const wrong = await fetch(`${secured.url}/metrics`, {
        headers: { authorization: 'Bearer metrics-token-012345678' },
      });
      expect(wrong.status).toBe(401);
      const right = await fetch(`${secured.url}/metrics`, {
        headers: { authorization: 'Bearer metrics-token-0123456789' },
      });
      expect(right.status).toBe(200);
      expect(await right.text()).toContain('acs_http_requests_total');
    } finally {
      await secured.close();
    }
  });
});
