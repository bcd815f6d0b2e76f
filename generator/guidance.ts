/**
 * The part of a tool's description written for the agent that picks and calls it: when to use it, what it changes and
 * what it costs. Composed at generation time from the YAML (`use_when`, `changes`, `cost`, the connector's `cost`) and
 * from what the generator knows of the tool (its annotations, how many provider requests it sends, whether its answer
 * continues with `next_cursor`). Agents see it appended to the description (MCP, the function-calling formats, REST);
 * tool search indexes the description alone, so the sentences every tool shares do not blur its ranking.
 */
import type { ConnectorSpec, ToolSpec } from '../core/spec-model.ts';
import { agentDescription } from '../core/agent-description.ts';
import type { Fail } from './compile.ts';
import { continues } from './output.ts';

/** OpenAI has refused function descriptions over 1,024 characters (`string_above_max_length`). */
export const MAX_AGENT_DESCRIPTION = 1024;

const NUMBER_WORDS = ['no', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];

function count(n: number): string {
  return NUMBER_WORDS[n] ?? String(n);
}

/**
 * How many provider requests one call sends: the YAML's when every request is always sent; for conditional requests
 * (`when`) and hook tools, the range the examples plan.
 */
function requestCount(tool: ToolSpec): string {
  if (tool.request && !tool.request.when) return 'one provider request';
  if (tool.requests?.length && tool.requests.every((r) => !r.when))
    return tool.requests.length === 1 ? 'one provider request' : `${count(tool.requests.length)} provider requests`;
  const planned = tool.examples.map((e) => e.requests.length).filter((n) => n > 0);
  if (!planned.length) return 'provider requests as its input needs';
  const lo = Math.min(...planned);
  const hi = Math.max(...planned);
  // A hook may follow up on what it reads (an example plans only what its input alone decides).
  if (tool.hook)
    return lo === hi
      ? `at least ${count(lo)} provider request${lo > 1 ? 's' : ''}`
      : `${count(lo)} or more provider requests, by input`;
  if (lo === hi) return lo === 1 ? 'one provider request' : `${count(lo)} provider requests`;
  return `${count(lo)} to ${count(hi)} provider requests, by input`;
}

function effect(tool: ToolSpec): string {
  if (tool.changes) return tool.changes.replace(/\.$/, '');
  const a = tool.annotations;
  if (a.readOnlyHint) {
    return a.openWorldHint
      ? "nothing (read-only); reads public data beyond the user's own account"
      : 'nothing (read-only)';
  }
  const what = a.destructiveHint
    ? "deletes or overwrites data in the user's account, which cannot be undone"
    : "adds or updates data in the user's account and removes nothing";
  const again = a.idempotentHint
    ? 'repeating it with the same input changes nothing more'
    : 'each call acts again, so calling twice does it twice';
  return `${what}; ${again}`;
}

function sentence(text: string): string {
  const t = text.trim();
  return /[.!?]$/.test(t) ? t : `${t}.`;
}

/** The agent-facing sentences of one tool (never empty: every tool changes something or nothing, and costs). */
export function toolGuidance(connector: ConnectorSpec, tool: ToolSpec): string {
  const paged = tool.output?.items && continues(tool);
  const requests = `${requestCount(tool)}${paged ? ' per page (next_cursor reads the next)' : ''}`;
  // A tool's own `cost` is the whole sentence (it names what it sends); the connector's follows the request count.
  const cost = tool.cost ?? (connector.cost ? `${requests}; ${connector.cost.replace(/\.$/, '')}` : requests);
  return [
    tool.use_when ? `When to use: ${sentence(tool.use_when)}` : '',
    `Changes: ${sentence(effect(tool))}`,
    `Cost: ${sentence(cost)}`,
  ]
    .filter(Boolean)
    .join(' ');
}

/** The tool's guidance, checked: with the description it must stay within what function-calling vendors take. */
export function checkedGuidance(connector: ConnectorSpec, tool: ToolSpec, fail: Fail): string {
  const guidance = toolGuidance(connector, tool);
  const text = agentDescription({ description: tool.description, guidance });
  if (text.length > MAX_AGENT_DESCRIPTION) {
    fail(
      ['description'],
      `with the agent guidance (use_when, changes, cost) is ${text.length} characters; function-calling vendors take at most ${MAX_AGENT_DESCRIPTION}: shorten the description or use_when`,
    );
  }
  return guidance;
}
