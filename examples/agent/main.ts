/**
 * An agent that acts on an end user's accounts through the connector service: `npm run example:agent`
 * (OpenAI's shapes) or `npm run example:agent -- anthropic` (Anthropic's). Offline: the model is scripted
 * (scripted-model.ts) and the providers are fakes (setup.ts); the service runs in this process.
 *
 * The loop is the whole integration:
 *   1. `client.getTools({ format, identifier })`: the tools this end user's accounts can run, as the vendor's tool
 *      definitions, handed to the model as they are;
 *   2. the model answers with tool calls;
 *   3. `client.handleToolCalls({ identifier, toolCalls | content })` runs them (in parallel) and returns the
 *      messages to append — failures included, as error results the model reads;
 *   4. repeat until the model answers in words.
 */
import type { AnthropicToolResultBlock, OpenAIToolMessage } from '../../packages/client/src/index.ts';
import { anthropic, openai, type AnthropicMessage, type OpenAIMessage } from './scripted-model.ts';
import { IDENTIFIER, startWorld, type World } from './setup.ts';

const TASK =
  'The customer who reported the printer jam says nobody answered. Tell them on their ticket that we fixed it ' +
  '(a worn roller, replaced), and email them a short summary.';
const MAX_TURNS = 8;

const shorten = (text: string, max = 150) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
const say = (who: string, text: string) => console.log(`${who.padEnd(10)} ${text}`);

async function openaiAgent({ client }: World): Promise<string> {
  const tools = await client.getTools({ format: 'openai-strict', identifier: IDENTIFIER });
  say('setup', `${tools.length} tools for ${IDENTIFIER}, in OpenAI strict-mode function format`);
  const messages: OpenAIMessage[] = [
    { role: 'system', content: 'You are the IT support assistant of Acme. Use the tools to act.' },
    { role: 'user', content: TASK },
  ];
  say('user', TASK);
  for (let turn = 0; turn < MAX_TURNS; turn++) {
    const completion = await openai.chat.completions.create({ model: 'scripted', messages, tools });
    const message = completion.choices[0]!.message;
    messages.push(message);
    if (!message.tool_calls?.length) return message.content ?? '';
    for (const call of message.tool_calls)
      say('assistant', `→ ${call.function.name} ${shorten(call.function.arguments)}`);
    const results: OpenAIToolMessage[] = await client.handleToolCalls({
      identifier: IDENTIFIER,
      toolCalls: message.tool_calls,
    });
    for (const r of results) say('tool', `← ${r.tool_call_id} ${shorten(r.content)}`);
    messages.push(...results);
  }
  throw new Error(`no answer after ${MAX_TURNS} turns`);
}

async function anthropicAgent({ client }: World): Promise<string> {
  const tools = await client.getTools({ format: 'anthropic', identifier: IDENTIFIER });
  say('setup', `${tools.length} tools for ${IDENTIFIER}, in Anthropic tool format`);
  const messages: AnthropicMessage[] = [{ role: 'user', content: TASK }];
  say('user', TASK);
  for (let turn = 0; turn < MAX_TURNS; turn++) {
    const response = await anthropic.messages.create({ model: 'scripted', max_tokens: 1024, messages, tools });
    messages.push({ role: 'assistant', content: response.content });
    if (response.stop_reason !== 'tool_use')
      return response.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    for (const b of response.content)
      if (b.type === 'tool_use') say('assistant', `→ ${b.name} ${shorten(JSON.stringify(b.input))}`);
    const results: AnthropicToolResultBlock[] = await client.handleToolCalls({
      identifier: IDENTIFIER,
      content: response.content,
    });
    for (const r of results) say('tool', `← ${r.tool_use_id}${r.is_error ? ' (error)' : ''} ${shorten(r.content)}`);
    messages.push({ role: 'user', content: results });
  }
  throw new Error(`no answer after ${MAX_TURNS} turns`);
}

const vendor = process.argv[2] ?? 'openai';
if (vendor !== 'openai' && vendor !== 'anthropic') {
  console.error(`usage: npm run example:agent [-- openai|anthropic] (not "${vendor}")`);
  process.exit(2);
}

const world = await startWorld();
try {
  const answer = vendor === 'openai' ? await openaiAgent(world) : await anthropicAgent(world);
  say('assistant', answer);

  // What the providers now hold, read from the fakes: the agent's work, not its claims.
  const tenant = world.desk.tenants.get('acme.zendesk.com')!;
  const reply = tenant.comments.get(world.ticketId)!.at(-1)!;
  const sent = world.graph.state.outbox.filter((o) => o.kind === 'message');
  console.log('');
  say(
    'check',
    `ticket #${world.ticketId}, last comment (${reply.public ? 'public' : 'internal'}): ${shorten(reply.body, 80)}`,
  );
  for (const o of sent) {
    const to = (o.message.toRecipients as Array<{ emailAddress: { address: string } }>).map(
      (r) => r.emailAddress.address,
    );
    say('check', `mail sent to ${to.join(', ')}: "${String(o.message.subject)}"`);
  }
} finally {
  await world.close();
}
