/**
 * The client library's `handleToolCalls`, on its own: what it sends for each vendor's tool calls, that it sends
 * them all before any answer comes back (in parallel), that results come back in the calls' order whatever order
 * the answers arrive in, and that every failure becomes an error result. The service's side of the same round trip
 * runs for real in test/e2e/agent-tools.test.ts; here a transport records the requests and answers them in an
 * order the test picks.
 */
import { describe, expect, it } from 'vitest';
import { AgentConnectorClient, type OpenAIToolCall } from '../../packages/client/src/index.ts';
import { asText } from '../helpers/text.ts';

interface Sent {
  body: Record<string, any>;
  answer(status: number, body: unknown): void;
}

/** A client whose requests to /v1/tools/execute wait until the test answers them. */
function recordingClient() {
  const sent: Sent[] = [];
  let arrived: () => void = () => {};
  const fetch = async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const path = new URL(asText(url)).pathname;
    if (path === '/oauth/token')
      return Response.json({ access_token: 'service-token', token_type: 'Bearer', expires_in: 900 });
    expect(path).toBe('/v1/tools/execute');
    expect(new Headers(init?.headers).get('authorization')).toBe('Bearer service-token');
    return new Promise<Response>((resolve) => {
      sent.push({
        body: JSON.parse(asText(init!.body)) as Record<string, any>,
        answer: (status, body) => resolve(Response.json(body, { status })),
      });
      arrived();
    });
  };
  const client = new AgentConnectorClient({
    clientId: 'id',
    clientSecret: 'secret',
    envUrl: 'http://service.invalid',
    fetch: fetch,
  });
  /** Resolves once `n` requests are waiting for an answer. */
  const waiting = (n: number) =>
    new Promise<void>((resolve) => {
      const check = () => (sent.length >= n ? resolve() : undefined);
      arrived = check;
      check();
    });
  return { client, sent, waiting };
}

const call = (id: string, name: string, args: string): OpenAIToolCall => ({
  id,
  type: 'function',
  function: { name, arguments: args },
});

describe('handleToolCalls', () => {
  it('OpenAI: sends every call at once, with input_format openai-strict, and answers in the calls’ order', async () => {
    const { client, sent, waiting } = recordingClient();
    const done = client.handleToolCalls({
      identifier: 'user-7',
      toolCalls: [
        call('call_a', 'helpdesk_ticket_get', '{"ticket_id":1,"include":null}'),
        call('call_b', 'mail_list_messages', ''),
        call('call_c', 'crm_deals_list', '{"limit":3}'),
      ],
      connectionFor: (tool) => (tool.startsWith('crm_') ? 'crm-eu' : undefined),
    });
    // All three are in flight before any is answered: they run in parallel.
    await waiting(3);
    expect(sent.map((s) => s.body)).toEqual([
      {
        tool_name: 'helpdesk_ticket_get',
        tool_input: { ticket_id: 1, include: null },
        input_format: 'openai-strict',
        identifier: 'user-7',
      },
      { tool_name: 'mail_list_messages', tool_input: {}, input_format: 'openai-strict', identifier: 'user-7' },
      {
        tool_name: 'crm_deals_list',
        tool_input: { limit: 3 },
        input_format: 'openai-strict',
        identifier: 'user-7',
        connection_name: 'crm-eu',
      },
    ]);
    // Answered last to first; the messages still follow the calls.
    sent[2]!.answer(200, { data: { results: [] }, execution_id: 'exe_3' });
    sent[1]!.answer(202, { data: null, execution_id: 'exe_2' });
    sent[0]!.answer(404, {
      error: { code: 'provider_error', message: 'Not found', provider_status: 404, provider_body: { error: 'x' } },
      request_id: 'req_1',
    });
    expect(await done).toEqual([
      {
        role: 'tool',
        tool_call_id: 'call_a',
        content: JSON.stringify({
          error: { code: 'provider_error', message: 'Not found', provider_status: 404, provider_body: { error: 'x' } },
        }),
      },
      { role: 'tool', tool_call_id: 'call_b', content: '{"ok":true,"data":null}' },
      { role: 'tool', tool_call_id: 'call_c', content: '{"results":[]}' },
    ]);
  });

  it('OpenAI: arguments that are not a JSON object are an error result, and are not sent', async () => {
    const { client, sent } = recordingClient();
    const out = await client.handleToolCalls({
      identifier: 'u',
      toolCalls: [
        call('c1', 'helpdesk_ticket_get', '{"ticket_id": 1'),
        call('c2', 'helpdesk_ticket_get', '[1]'),
        { id: 'c3', type: 'custom' },
      ],
    });
    expect(sent).toHaveLength(0);
    expect(JSON.parse(out[0]!.content).error).toMatchObject({ code: 'invalid_arguments' });
    expect(JSON.parse(out[0]!.content).error.message).toMatch(/not JSON/);
    expect(JSON.parse(out[1]!.content).error.details).toEqual([{ field: '(input)', message: 'must be a JSON object' }]);
  });

  it('Anthropic: tool_use blocks only, tool_result blocks back with is_error on failures', async () => {
    const { client, sent, waiting } = recordingClient();
    const done = client.handleToolCalls({
      identifier: 'user-7',
      dryRun: true,
      content: [
        { type: 'text', text: 'Checking.' },
        { type: 'tool_use', id: 'toolu_1', name: 'helpdesk_ticket_get', input: { ticket_id: 5 } },
        { type: 'tool_use', id: 'toolu_2', name: 'helpdesk_ticket_get', input: { ticket_id: 'x' } },
      ],
    });
    await waiting(2);
    expect(sent.map((s) => s.body)).toEqual([
      {
        tool_name: 'helpdesk_ticket_get',
        tool_input: { ticket_id: 5 },
        input_format: 'anthropic',
        identifier: 'user-7',
        dry_run: true,
      },
      {
        tool_name: 'helpdesk_ticket_get',
        tool_input: { ticket_id: 'x' },
        input_format: 'anthropic',
        identifier: 'user-7',
        dry_run: true,
      },
    ]);
    sent[0]!.answer(200, { data: { requests: [] }, execution_id: 'exe_1' });
    const invalid = {
      code: 'invalid_input',
      message: 'Invalid input',
      details: [{ field: 'ticket_id', message: 'must be an integer' }],
    };
    sent[1]!.answer(400, { error: invalid, request_id: 'req_2' });
    expect(await done).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_1', content: '{"requests":[]}' },
      { type: 'tool_result', tool_use_id: 'toolu_2', content: JSON.stringify({ error: invalid }), is_error: true },
    ]);
  });

  it('OpenAI Responses API: function_call items in, function_call_output items out', async () => {
    const { client, sent, waiting } = recordingClient();
    const done = client.handleToolCalls({
      identifier: 'user-7',
      output: [
        { type: 'reasoning', id: 'rs_1' },
        {
          type: 'function_call',
          id: 'fc_1',
          call_id: 'call_9',
          name: 'helpdesk_ticket_get',
          arguments: '{"ticket_id":9}',
        },
      ],
    });
    await waiting(1);
    expect(sent[0]!.body).toEqual({
      tool_name: 'helpdesk_ticket_get',
      tool_input: { ticket_id: 9 },
      input_format: 'openai-strict',
      identifier: 'user-7',
    });
    sent[0]!.answer(200, { data: { ticket: { id: 9 } }, execution_id: 'exe_9' });
    expect(await done).toEqual([{ type: 'function_call_output', call_id: 'call_9', output: '{"ticket":{"id":9}}' }]);
  });

  it('Gemini: functionCalls in, functionResponse parts out (output, or error)', async () => {
    const { client, sent, waiting } = recordingClient();
    const done = client.handleToolCalls({
      identifier: 'user-7',
      functionCalls: [
        { id: 'g1', name: 'mail_list_messages', args: { _top: 2 } },
        { name: 'helpdesk_ticket_get', args: { ticket_id: 1 } },
      ],
    });
    await waiting(2);
    expect(sent.map((s) => [s.body.tool_name, s.body.tool_input, s.body.input_format])).toEqual([
      ['mail_list_messages', { _top: 2 }, 'gemini'],
      ['helpdesk_ticket_get', { ticket_id: 1 }, 'gemini'],
    ]);
    sent[0]!.answer(200, { data: { value: [] }, execution_id: 'exe_1' });
    sent[1]!.answer(409, { error: { code: 'account_expired', message: 'Reconnect' }, request_id: 'r' });
    expect(await done).toEqual([
      { functionResponse: { id: 'g1', name: 'mail_list_messages', response: { output: { value: [] } } } },
      {
        functionResponse: {
          name: 'helpdesk_ticket_get',
          response: { error: { code: 'account_expired', message: 'Reconnect' } },
        },
      },
    ]);
  });

  it('refuses to guess which vendor: exactly one of toolCalls, output, content, functionCalls', async () => {
    const { client } = recordingClient();
    await expect(client.handleToolCalls({ identifier: 'u', toolCalls: [], content: [] } as never)).rejects.toThrow(
      /give one of/,
    );
  });

  it('a service that cannot be reached is an error result too, not an exception', async () => {
    const client = new AgentConnectorClient({
      clientId: 'id',
      clientSecret: 'secret',
      envUrl: 'http://service.invalid',
      fetch: () => Promise.reject(new TypeError('fetch failed')),
    });
    const out = await client.handleToolCalls({
      identifier: 'u',
      content: [{ type: 'tool_use', id: 't1', name: 'helpdesk_ticket_get', input: { ticket_id: 1 } }],
    });
    expect(out).toEqual([
      {
        type: 'tool_result',
        tool_use_id: 't1',
        content: JSON.stringify({ error: { code: 'client_error', message: 'fetch failed' } }),
        is_error: true,
      },
    ]);
  });

  it('no tool calls: nothing to send back', async () => {
    const { client } = recordingClient();
    expect(await client.handleToolCalls({ identifier: 'u', toolCalls: null })).toEqual([]);
    expect(await client.handleToolCalls({ identifier: 'u', content: [{ type: 'text' }] })).toEqual([]);
  });
});
