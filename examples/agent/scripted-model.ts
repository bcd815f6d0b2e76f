/**
 * A scripted stand-in for an LLM, so the example runs offline and the same way every time. It reads the
 * conversation the way a model would — the tools it was offered, the results the tools gave back — and decides
 * the next step from them: it never knows a ticket id or an email address the tools did not tell it. It also
 * makes one mistake a real model makes (a single address where the tool takes a list) and corrects it from the
 * error result, to show that an error comes back to the model as a result, not as an exception.
 *
 * It has two faces with the vendors' own request and response shapes: `openai.chat.completions.create`
 * (Chat Completions, strict-mode tools) and `anthropic.messages.create` (Messages API). Swap either for the real
 * SDK client and the agent loop in main.ts stays as it is.
 */
import type {
  AnthropicTool,
  AnthropicToolResultBlock,
  AnthropicToolUseBlock,
  OpenAITool,
  OpenAIToolCall,
  OpenAIToolMessage,
} from '../../packages/client/src/index.ts';

type Json = Record<string, unknown>;
/** The parts of the tools' answers the model reads. */
interface Ticket {
  id: number;
  requester_id: number;
}
interface Person {
  name: string;
  email: string;
}
interface ErrorResult {
  error?: { message?: string; details?: Array<{ field: string }> };
}

/** What the model saw happen: a tool it called, with what, and what came back. */
interface Seen {
  name: string;
  input: Json;
  result: Json;
  isError: boolean;
}

/** The model's next move: tool calls (run in parallel), or its final answer. */
type Step = { calls: Array<{ name: string; input: Json }> } | { text: string };

function decide(offered: ReadonlySet<string>, seen: Seen[]): Step {
  const last = (name: string) => seen.filter((s) => s.name === name).at(-1);
  const need = (...names: string[]) => names.find((n) => !offered.has(n));
  const missing = need('helpdesk_search_tickets', 'helpdesk_ticket_reply', 'helpdesk_user_get', 'mail_send_message');
  if (missing) return { text: `I cannot do this: I have no tool like ${missing}.` };

  const search = last('helpdesk_search_tickets');
  if (!search) return { calls: [{ name: 'helpdesk_search_tickets', input: { query: 'printer status:open' } }] };
  const ticket = (search.result.results as Ticket[] | undefined)?.[0];
  if (!ticket) return { text: 'I found no open ticket about the printer.' };

  const reply = last('helpdesk_ticket_reply');
  const requester = last('helpdesk_user_get');
  if (!reply || !requester) {
    return {
      calls: [
        {
          name: 'helpdesk_ticket_reply',
          input: {
            ticket_id: ticket.id,
            body: 'Good news: the printer on the 3rd floor is fixed (a worn roller, now replaced). Thanks for your patience!',
            public: true,
          },
        },
        { name: 'helpdesk_user_get', input: { user_id: ticket.requester_id } },
      ],
    };
  }
  if (reply.isError)
    return {
      text: `I could not reply on the ticket: ${(reply.result as ErrorResult).error?.message ?? 'no reason given'}`,
    };
  const customer = requester.result.user as Person;

  const mail = last('mail_send_message');
  const summary = {
    subject: `Your ticket #${ticket.id}: the printer is fixed`,
    body: `Hello ${customer.name},\n\nThe printer on the 3rd floor jammed because of a worn roller; we replaced it and it prints again. Ticket #${ticket.id} has the details.\n\nAcme IT`,
  };
  // The first attempt passes one address where the tool takes a list: the error result names the field.
  if (!mail) return { calls: [{ name: 'mail_send_message', input: { toRecipients: customer.email, ...summary } }] };
  if (mail.isError && seen.filter((s) => s.name === 'mail_send_message').length === 1) {
    const field = (mail.result as ErrorResult).error?.details?.[0]?.field;
    if (field === 'toRecipients')
      return { calls: [{ name: 'mail_send_message', input: { toRecipients: [customer.email], ...summary } }] };
  }
  if (mail.isError) return { text: `I replied on ticket #${ticket.id} but could not send the email.` };
  return {
    text: `Done. I replied on ticket #${ticket.id} that the printer is fixed, and emailed ${customer.name} (${customer.email}) a summary.`,
  };
}

const parse = (text: string): Json => {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' ? (value as Json) : { value };
  } catch {
    return { text };
  }
};
const isErrorResult = (result: Json) => typeof result.error === 'object' && result.error !== null;

/**
 * A strict-mode model sends every property of the schema it was given, null for those it leaves out; the service
 * drops those nulls again (`input_format: "openai-strict"`, which handleToolCalls sends).
 */
function strictArguments(tool: OpenAITool | undefined, input: Json): string {
  const properties = Object.keys((tool?.function.parameters.properties as Json | undefined) ?? {});
  return JSON.stringify(Object.fromEntries(properties.map((p) => [p, input[p] ?? null])));
}

let ids = 0;
const nextId = (prefix: string) => `${prefix}_${String(++ids).padStart(4, '0')}`;

export type OpenAIMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: OpenAIToolCall[] }
  | OpenAIToolMessage;

/** The Chat Completions face: `openai.chat.completions.create({ model, messages, tools })`. */
export const openai = {
  chat: {
    completions: {
      create(request: { model: string; messages: OpenAIMessage[]; tools: OpenAITool[] }) {
        const seen: Seen[] = [];
        for (const m of request.messages) {
          if (m.role !== 'assistant' || !m.tool_calls) continue;
          for (const call of m.tool_calls) {
            const answer = request.messages.find(
              (r): r is OpenAIToolMessage => r.role === 'tool' && r.tool_call_id === call.id,
            );
            const result = parse(answer?.content ?? '{}');
            seen.push({
              name: call.function.name,
              input: parse(call.function.arguments),
              result,
              isError: isErrorResult(result),
            });
          }
        }
        const step = decide(new Set(request.tools.map((t) => t.function.name)), seen);
        const message: Extract<OpenAIMessage, { role: 'assistant' }> =
          'text' in step
            ? { role: 'assistant', content: step.text }
            : {
                role: 'assistant',
                content: null,
                tool_calls: step.calls.map((c) => ({
                  id: nextId('call'),
                  type: 'function' as const,
                  function: {
                    name: c.name,
                    arguments: strictArguments(
                      request.tools.find((t) => t.function.name === c.name),
                      c.input,
                    ),
                  },
                })),
              };
        // Promise-returning, as the SDK's method is.
        return Promise.resolve({
          choices: [{ index: 0, message, finish_reason: 'text' in step ? 'stop' : 'tool_calls' }],
        });
      },
    },
  },
};

export type AnthropicBlock = { type: 'text'; text: string } | AnthropicToolUseBlock | AnthropicToolResultBlock;
export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: string | AnthropicBlock[];
}

/** The Messages API face: `anthropic.messages.create({ model, max_tokens, messages, tools })`. */
export const anthropic = {
  messages: {
    create(request: { model: string; max_tokens: number; messages: AnthropicMessage[]; tools: AnthropicTool[] }) {
      const blocks = request.messages.flatMap((m) => (typeof m.content === 'string' ? [] : m.content));
      const seen: Seen[] = blocks
        .filter((b): b is AnthropicToolUseBlock => b.type === 'tool_use')
        .map((use) => {
          const answer = blocks.find(
            (b): b is AnthropicToolResultBlock => b.type === 'tool_result' && b.tool_use_id === use.id,
          );
          return {
            name: use.name,
            input: use.input as Json,
            result: parse(answer?.content ?? '{}'),
            isError: answer?.is_error === true,
          };
        });
      const step = decide(new Set(request.tools.map((t) => t.name)), seen);
      const content: AnthropicBlock[] =
        'text' in step
          ? [{ type: 'text', text: step.text }]
          : step.calls.map((c) => ({ type: 'tool_use' as const, id: nextId('toolu'), name: c.name, input: c.input }));
      return Promise.resolve({
        role: 'assistant' as const,
        content,
        stop_reason: 'text' in step ? 'end_turn' : 'tool_use',
      });
    },
  },
};
