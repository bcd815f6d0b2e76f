/**
 * What an agent plugs into, end to end: `GET /v1/tools?format=` (every tool in every vendor format, checked
 * against each vendor's documented rules; the filters `names`, `connection_names` and `identifier`),
 * `GET /v1/tools/search`, `POST /v1/tools/execute` with `input_format` and with the end user alone, and the client
 * library's `getTools`, `searchTools` and `handleToolCalls` round-tripping OpenAI and Anthropic tool calls against
 * the fake support desk and the fake mail provider.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolCount, tools } from '../../generated/registry.ts';
import type { AnthropicToolUseBlock, OpenAIToolCall } from '../../packages/client/src/index.ts';
import { FakeDesk } from '../fakes/desk.ts';
import { startFakeGraph, type FakeGraph } from '../fakes/graph.ts';
import { authorize, oauthConnection, startHarness, type Harness } from '../helpers/harness.ts';
import {
  anthropicToolViolations,
  geminiDeclarationViolations,
  mcpToolViolations,
  openaiToolViolations,
} from '../helpers/llm-vendor-rules.ts';
import { failure } from '../helpers/tools.ts';

let h: Harness;
let desk: FakeDesk;
let graph: FakeGraph;
let token: string;
const DOMAIN = 'acme.zendesk.com';
const EMAIL = 'agent@acme.com';
const DESK_TOKEN = 'zd-agent-tools-token-51c2';
const creds = { domain: DOMAIN, email: EMAIL, api_token: DESK_TOKEN };

type Json = Record<string, any>;

async function get(path: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${h.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as Json };
}
async function execute(body: Json): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${h.url}/v1/tools/execute`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

beforeAll(async () => {
  h = await startHarness();
  desk = await new FakeDesk().start();
  desk.addTenant(DOMAIN, EMAIL, DESK_TOKEN);
  graph = await startFakeGraph({ validateToken: (t) => !!h.oauth.validate(t) });
  await h.client.createConnection({
    connection_name: 'helpdesk',
    connector: 'helpdesk',
    api_base_url: desk.baseUrlTemplate,
  });
  await oauthConnection(h, 'mail', 'mail', graph.url);
  // ada: ACTIVE on both; bo: ACTIVE on the desk, only PENDING_AUTH on mail; cy: nothing at all.
  await h.client.upsertConnectedAccount({ connectionName: 'helpdesk', identifier: 'ada', credentials: creds });
  await authorize(h, 'mail', 'ada');
  await h.client.upsertConnectedAccount({ connectionName: 'helpdesk', identifier: 'bo', credentials: creds });
  await h.client.getOrCreateConnectedAccount({ connectionName: 'mail', identifier: 'bo' });
  const res = await fetch(`${h.url}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({ client_id: 'acs_test_client', client_secret: 'acs_sk_test_secret_0123456789abcdef' }),
  });
  token = ((await res.json()) as { access_token: string }).access_token;
});
afterAll(async () => {
  await graph?.close();
  await desk?.close();
  await h?.close();
});

describe('GET /v1/tools?format=: every tool in every vendor format', () => {
  it('openai (Chat Completions), plain and strict, meets OpenAI’s rules', async () => {
    for (const [query, strict] of [
      ['format=openai', false],
      ['format=openai-strict', true],
      ['format=openai&strict=true', true],
    ] as const) {
      const { status, body } = await get(`/v1/tools?${query}`);
      expect(status).toBe(200);
      expect(body).toMatchObject({ format: strict ? 'openai-strict' : 'openai', api: 'chat', count: toolCount });
      expect(body.tools).toHaveLength(toolCount);
      for (const t of body.tools) expect(openaiToolViolations(t, 'chat', strict), t.function.name).toEqual([]);
      expect(body.tools.every((t: Json) => (t.function.strict === true) === strict)).toBe(true);
    }
  });

  it('openai for the Responses API (api=responses), plain and strict', async () => {
    for (const strict of [false, true]) {
      const { body } = await get(`/v1/tools?format=${strict ? 'openai-strict' : 'openai'}&api=responses`);
      expect(body).toMatchObject({ api: 'responses', count: toolCount });
      for (const t of body.tools) expect(openaiToolViolations(t, 'responses', strict), t.name).toEqual([]);
    }
  });

  it('anthropic, gemini and mcp meet their vendors’ rules', async () => {
    const anthropic = (await get('/v1/tools?format=anthropic')).body;
    expect(anthropic).toMatchObject({ format: 'anthropic', count: toolCount });
    for (const t of anthropic.tools) expect(anthropicToolViolations(t), t.name).toEqual([]);

    const gemini = (await get('/v1/tools?format=gemini')).body;
    expect(gemini).toMatchObject({ format: 'gemini', count: toolCount });
    expect(gemini.tools).toHaveLength(1);
    expect(gemini.tools[0].functionDeclarations).toHaveLength(toolCount);
    for (const d of gemini.tools[0].functionDeclarations) expect(geminiDeclarationViolations(d), d.name).toEqual([]);

    const mcp = (await get('/v1/tools?format=mcp')).body;
    expect(mcp).toMatchObject({ format: 'mcp', count: toolCount });
    for (const t of mcp.tools) {
      expect(mcpToolViolations(t), t.name).toEqual([]);
      expect(t.title).toBe(tools.get(t.name)!.title);
    }
  });

  it('without format, the service’s own view, as before', async () => {
    const { body } = await get('/v1/tools?connector=helpdesk');
    expect(body.format).toBeUndefined();
    expect(body.tools[0]).toHaveProperty('input_schema');
    expect(body.count).toBe(16);
  });
});

describe('GET /v1/tools filters', () => {
  it('names: exactly those tools; an unknown name is a 400 naming it with a suggestion', async () => {
    const { body } = await get('/v1/tools?format=anthropic&names=helpdesk_ticket_get,%20mail_send_message');
    expect(body.tools.map((t: Json) => t.name)).toEqual(['helpdesk_ticket_get', 'mail_send_message']);
    const bad = await get('/v1/tools?format=anthropic&names=helpdesk_ticket_gett,mail_send_message,zzz');
    expect(bad.status).toBe(400);
    expect(bad.body.error.details).toEqual([
      {
        field: 'names',
        message: expect.stringContaining('"helpdesk_ticket_gett" (did you mean helpdesk_ticket_get?)'),
      },
    ]);
    expect(bad.body.error.message).toContain('"zzz"');
    expect(bad.body.error.message).not.toContain('mail_send_message');
    expect((await get('/v1/tools?names=,')).body.error.details[0].field).toBe('names');
  });

  it('identifier: only the tools of connections where that end user has an ACTIVE account', async () => {
    const connectorsOf = async (id: string) =>
      new Set(
        (await get(`/v1/tools?format=mcp&identifier=${id}`)).body.tools.map((t: Json) => tools.get(t.name)!.connector),
      );
    expect(await connectorsOf('ada')).toEqual(new Set(['helpdesk', 'mail']));
    // bo's mail account is PENDING_AUTH: not a tool an agent could run for bo yet
    expect(await connectorsOf('bo')).toEqual(new Set(['helpdesk']));
    const none = (await get('/v1/tools?format=gemini&identifier=cy')).body;
    expect(none).toEqual({ format: 'gemini', tools: [], count: 0 });
  });

  it('connection_names, and the filters together', async () => {
    const mail = (await get('/v1/tools?format=openai&connection_names=mail')).body;
    expect(mail.count).toBe(26);
    const both = (await get('/v1/tools?format=openai&connection_names=mail&identifier=bo')).body;
    expect(both.count).toBe(0);
    const one = (
      await get('/v1/tools?format=openai&identifier=ada&connector=helpdesk&names=helpdesk_ticket_get,mail_send_message')
    ).body;
    expect(one.tools.map((t: Json) => t.function.name)).toEqual(['helpdesk_ticket_get']);
    const bad = await get('/v1/tools?format=openai&connection_names=mial');
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0]).toEqual({
      field: 'connection_names',
      message: expect.stringContaining('"mial" (did you mean mail?)'),
    });
  });

  it('refuses a bad format and options that do not go with it, naming the field', async () => {
    const field = async (q: string) => {
      const r = await get(`/v1/tools?${q}`);
      expect(r.status, q).toBe(400);
      return r.body.error.details[0].field;
    };
    expect(await field('format=claude')).toBe('format');
    expect(await field('format=anthropic&strict=true')).toBe('strict');
    expect(await field('strict=true')).toBe('strict');
    expect(await field('format=openai&strict=maybe')).toBe('strict');
    expect(await field('format=openai-strict&strict=false')).toBe('strict');
    expect(await field('format=mcp&api=responses')).toBe('api');
    expect(await field('format=openai&format=mcp')).toBe('format');
    expect(await field('format=openai&identifier=')).toBe('identifier');
  });
});

describe('GET /v1/tools/search', () => {
  it('ranks the tools for a task, with name, connector, title, description and score', async () => {
    const { status, body } = await get(
      `/v1/tools/search?q=${encodeURIComponent("reply to the customer's ticket saying we fixed it")}`,
    );
    expect(status).toBe(200);
    expect(body.tools).toHaveLength(5);
    expect(body.tools[0]).toEqual({
      name: 'helpdesk_ticket_reply',
      connector: 'helpdesk',
      title: tools.get('helpdesk_ticket_reply')!.title,
      description: tools.get('helpdesk_ticket_reply')!.description,
      score: expect.any(Number),
    });
    const li = (
      await get(`/v1/tools/search?q=${encodeURIComponent('who are the decision makers at Acme on LinkedIn')}`)
    ).body;
    expect(li.tools[0].connector).toBe('prodata');
  });

  it('keeps to a connector and a limit; a limit above the tool count returns every match', async () => {
    const { body } = await get('/v1/tools/search?q=list&connector=mail&limit=3');
    expect(body.tools).toHaveLength(3);
    expect(body.tools.every((t: Json) => t.connector === 'mail')).toBe(true);
    expect((await get('/v1/tools/search?q=list&limit=1000')).status).toBe(200);
  });

  it('is routed before /v1/tools/{tool_name}, and refuses an empty query naming q', async () => {
    for (const q of ['', '?q=', '?q=%20%20']) {
      const r = await get(`/v1/tools/search${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error.details[0].field).toBe('q');
    }
    expect((await get('/v1/tools/search?q=x&limit=0')).body.error.details[0].field).toBe('limit');
    expect((await get('/v1/tools/search?q=x&connector=gmail')).body.error.details[0].field).toBe('connector');
  });
});

describe('POST /v1/tools/execute for agents', () => {
  it('input_format openai-strict: the nulls of optional fields are dropped before validation', async () => {
    const strictArgs = { per_page: 2, page: null, sort_by: null, sort_order: 'asc' };
    const plain = await execute({
      tool_name: 'helpdesk_tickets_list',
      identifier: 'ada',
      connection_name: 'helpdesk',
      tool_input: strictArgs,
    });
    expect(plain.status).toBe(400);
    const mapped = await execute({
      tool_name: 'helpdesk_tickets_list',
      identifier: 'ada',
      connection_name: 'helpdesk',
      tool_input: strictArgs,
      input_format: 'openai-strict',
    });
    expect(mapped.status).toBe(200);
    expect(mapped.body.data.tickets).toHaveLength(2);
    // a null in a required field is still refused, naming it
    const missing = await execute({
      tool_name: 'helpdesk_ticket_get',
      identifier: 'ada',
      tool_input: { ticket_id: null, include: null },
      input_format: 'openai-strict',
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error.details).toEqual([{ field: 'ticket_id', message: expect.any(String) }]);
    const bad = await execute({
      tool_name: 'helpdesk_ticket_get',
      identifier: 'ada',
      tool_input: {},
      input_format: 'grok',
    });
    expect(bad.body.error.details[0].field).toBe('input_format');
  });

  it('the end user alone: the account on the connection of the tool’s connector', async () => {
    const r = await execute({ tool_name: 'helpdesk_tickets_list', identifier: 'ada', tool_input: { per_page: 1 } });
    expect(r.status).toBe(200);
    const mail = await execute({ tool_name: 'mail_list_messages', identifier: 'ada', tool_input: { $top: 1 } });
    expect(mail.status).toBe(200);
    const pending = await execute({ tool_name: 'mail_list_messages', identifier: 'bo', tool_input: {} });
    expect(pending.status).toBe(409);
    const nobody = await execute({ tool_name: 'mail_list_messages', identifier: 'cy', tool_input: {} });
    expect(nobody.status).toBe(404);
    expect(nobody.body.error.code).toBe('account_not_found');
  });

  it('an end user with ACTIVE accounts on two connections of one connector must name the connection', async () => {
    await h.client.createConnection({
      connection_name: 'helpdesk-2',
      connector: 'helpdesk',
      api_base_url: desk.baseUrlTemplate,
    });
    try {
      await h.client.upsertConnectedAccount({ connectionName: 'helpdesk-2', identifier: 'ada', credentials: creds });
      const r = await execute({ tool_name: 'helpdesk_tickets_list', identifier: 'ada', tool_input: {} });
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('ambiguous_connection');
      expect(r.body.error.details[0]).toEqual({
        field: 'connection_name',
        message: expect.stringContaining('helpdesk-2'),
      });
      // bo has an account on one of them only
      expect((await execute({ tool_name: 'helpdesk_tickets_list', identifier: 'bo', tool_input: {} })).status).toBe(
        200,
      );
    } finally {
      await h.client.deleteConnection('helpdesk-2');
    }
  });
});

describe('the client library', () => {
  it('getTools in each format, with the filters', async () => {
    const openai = await h.client.getTools({ format: 'openai-strict', identifier: 'bo' });
    expect(openai).toHaveLength(16);
    expect(openai[0]!.function.strict).toBe(true);
    const anthropic = await h.client.getTools({ format: 'anthropic', names: ['mail_send_message'] });
    expect(anthropic.map((t) => t.name)).toEqual(['mail_send_message']);
    const gemini = await h.client.getTools({ format: 'gemini', connectionNames: ['helpdesk'] });
    expect(gemini[0]!.functionDeclarations).toHaveLength(16);
    const responses = await h.client.getTools({ format: 'openai', api: 'responses', connector: 'mail' });
    expect(responses[0]!.strict).toBe(false);
    const mcp = await h.client.getTools({ format: 'mcp', connector: 'notes' });
    expect(mcp).toHaveLength(4);
    const e = await failure(h.client.getTools({ format: 'openai', names: ['mail_sendmessage'] }));
    expect(e.status).toBe(400);
    expect(e.details[0]!.field).toBe('names');
  });

  it('searchTools', async () => {
    const hits = await h.client.searchTools('send an email to the team', { limit: 3, connector: 'mail' });
    expect(hits.length).toBeLessThanOrEqual(3);
    expect(hits[0]!.name).toBe('mail_send_message');
    expect((await failure(h.client.searchTools(' '))).details[0]!.field).toBe('q');
  });

  it('handleToolCalls: OpenAI tool_calls in, role "tool" messages out, errors as error results', async () => {
    const toolCalls: OpenAIToolCall[] = [
      {
        id: 'call_1',
        type: 'function',
        function: {
          name: 'helpdesk_tickets_list',
          arguments: '{"per_page":2,"page":null,"sort_by":null,"sort_order":null}',
        },
      },
      { id: 'call_2', type: 'function', function: { name: 'mail_list_messages', arguments: '{"$top":1}' } },
      { id: 'call_3', type: 'function', function: { name: 'helpdesk_ticket_get', arguments: '{"ticket_id":' } },
      { id: 'call_4', type: 'function', function: { name: 'helpdesk_ticket_get', arguments: '{"ticket_id":"abc"}' } },
      { id: 'call_5', type: 'function', function: { name: 'helpdesk_ticket_get', arguments: '{"ticket_id":999999}' } },
      { id: 'call_6', type: 'function', function: { name: 'helpdesk_tiket_get', arguments: '{}' } },
    ];
    const messages = await h.client.handleToolCalls({ identifier: 'ada', toolCalls });
    expect(messages.map((m) => [m.role, m.tool_call_id])).toEqual(toolCalls.map((c) => ['tool', c.id]));
    const [list, mail, notJson, invalid, missing, unknown] = messages.map((m) => JSON.parse(m.content) as Json);
    expect(list!.tickets).toHaveLength(2);
    expect(Array.isArray(mail!.value)).toBe(true);
    expect(notJson!.error.code).toBe('invalid_arguments');
    expect(invalid!.error).toMatchObject({ code: 'invalid_input', details: [{ field: 'ticket_id' }] });
    expect(missing!.error).toMatchObject({ code: 'provider_error', provider_status: 404 });
    expect(unknown!.error.message).toMatch(/did you mean .*helpdesk_ticket_get/);
    expect(await h.client.handleToolCalls({ identifier: 'ada', toolCalls: undefined })).toEqual([]);
  });

  it('handleToolCalls: Gemini functionCalls with a renamed parameter, and OpenAI Responses function_call items', async () => {
    const [gemini] = await h.client.getTools({ format: 'gemini', names: ['mail_list_messages'] });
    const top = Object.keys(gemini!.functionDeclarations[0]!.parameters!.properties as object).find((n) =>
      /top/.test(n),
    )!;
    expect(top).not.toBe('$top');
    const parts = await h.client.handleToolCalls({
      identifier: 'ada',
      functionCalls: [
        { id: 'fc1', name: 'mail_list_messages', args: { [top]: 1 } },
        { id: 'fc2', name: 'mail_list_messages', args: { [top]: 'many' } },
      ],
    });
    expect(parts[0]!.functionResponse).toMatchObject({ id: 'fc1', name: 'mail_list_messages' });
    expect((parts[0]!.functionResponse.response.output as Json).value).toHaveLength(1);
    // the error names the tool's own parameter, the one the service validated
    expect(parts[1]!.functionResponse.response).toMatchObject({
      error: { code: 'invalid_input', details: [{ field: '$top' }] },
    });

    const outputs = await h.client.handleToolCalls({
      identifier: 'ada',
      output: [
        { type: 'message', role: 'assistant', content: [] },
        {
          type: 'function_call',
          call_id: 'call_r1',
          name: 'helpdesk_tickets_list',
          arguments: '{"per_page":1,"page":null,"sort_by":null,"sort_order":null}',
        },
      ],
    });
    expect(outputs).toHaveLength(1);
    expect(outputs[0]).toMatchObject({ type: 'function_call_output', call_id: 'call_r1' });
    expect(JSON.parse(outputs[0]!.output).tickets).toHaveLength(1);
  });

  it('handleToolCalls: Anthropic tool_use blocks in, tool_result blocks out', async () => {
    const content: Array<AnthropicToolUseBlock | { type: 'text'; text: string }> = [
      { type: 'text', text: 'Let me look.' },
      {
        type: 'tool_use',
        id: 'toolu_1',
        name: 'helpdesk_ticket_create',
        input: { subject: 'Printer', comment_body: 'On fire' },
      },
      { type: 'tool_use', id: 'toolu_2', name: 'mail_list_messages', input: { $top: 1 } },
      { type: 'tool_use', id: 'toolu_3', name: 'helpdesk_ticket_get', input: { ticket_id: 1, colour: 'red' } },
    ];
    const ada = await h.client.handleToolCalls({ identifier: 'ada', content });
    expect(ada.map((b) => [b.type, b.tool_use_id, b.is_error ?? false])).toEqual([
      ['tool_result', 'toolu_1', false],
      ['tool_result', 'toolu_2', false],
      ['tool_result', 'toolu_3', true],
    ]);
    const created = JSON.parse(ada[0]!.content) as Json;
    expect(created.ticket.subject).toBe('Printer');
    expect(desk.tenants.get(DOMAIN)!.tickets.get(created.ticket.id)).toBeDefined();
    expect(JSON.parse(ada[2]!.content).error.details[0].field).toBe('colour');

    // bo has no ACTIVE mail account: an error result the model can relay, not an exception
    const bo = await h.client.handleToolCalls({ identifier: 'bo', content });
    expect(bo[1]!.is_error).toBe(true);
    expect(JSON.parse(bo[1]!.content).error.code).toBe('account_not_authorized');
  });
});
