/**
 * What an agent needs of the tool catalogue: the tools as LLM tool definitions (`GET /v1/tools?format=`), narrowed
 * to what one end user can run; the account a model's tool call runs on when only the end user is named; and the
 * model's arguments read back into a tool's input (`POST /v1/tools/execute` with `input_format`).
 *
 * Tools belong to connectors; connections are the operator's instances of a connector (one per provider app), and
 * an end user's connected account lives on one connection. So "the tools this identifier can use" are the tools of
 * the connectors of the connections where it has an ACTIVE account.
 */
import type { Operations } from '../../generated/api/types.ts';
import { invalidInput, ServiceError } from '../../core/errors.ts';
import type { FieldError, ToolDefinition } from '../../core/tool-types.ts';
import { accountAuthKind, authFor, connectors, getTool, tools } from '../connectors/catalog.ts';
import { missingScopes } from '../connect/scopes.ts';
import type { AuthSpec } from '../../core/spec-model.ts';
import type { Services } from '../services.ts';
import type { Account, Connection } from '../store/types.ts';
import { encodeCursor } from '../store/cursor.ts';
import { geminiFunctionDeclaration, inputFromModel, llmTool, type LlmFormat } from '../tools/llm-formats.ts';
import { suggest } from '../tools/validation.ts';
import { mcpIcons } from '../connectors/icons.ts';

type ListToolsQuery = Operations['listTools']['query'];
type ListToolsResponse = Operations['listTools']['response'];
export type InputFormat = NonNullable<Operations['executeTool']['body']['input_format']>;

const PAGE = 1000;

/** Every connected account of one end user, on any connection. */
async function accountsOf(s: Services, identifier: string): Promise<Account[]> {
  const out: Account[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await s.store.listAccounts({ identifier, limit: PAGE, after });
    out.push(...page);
    if (page.length < PAGE) return out;
    after = encodeCursor(page[page.length - 1]!);
  }
}

/** A comma-separated list of names: trimmed, empty items dropped, each once. */
function nameList(raw: string): string[] {
  return [...new Set(raw.split(',').map((n) => n.trim()))].filter(Boolean);
}

function unknownNames(field: string, what: string, unknown: string[], known: readonly string[]): ServiceError {
  const described = unknown.map((n) => {
    const hint = suggest(n, known);
    return `"${n}"${hint ? ` (did you mean ${hint}?)` : ''}`;
  });
  return new ServiceError(400, 'invalid_input', `Unknown ${what}: ${described.join(', ')}`, [
    { field, message: `names unknown ${what}: ${described.join(', ')}` },
  ]);
}

function fieldError(field: string, message: string): ServiceError {
  return new ServiceError(400, 'invalid_input', `${field} ${message}`, [{ field, message }]);
}

/** The tools a listing keeps, in the registry's order. */
async function selectTools(s: Services, q: ListToolsQuery): Promise<ToolDefinition[]> {
  if (q.connector !== undefined && !connectors.has(q.connector)) {
    throw new ServiceError(400, 'invalid_input', `Unknown connector "${q.connector}"`, [
      { field: 'connector', message: `must be one of: ${[...connectors.keys()].join(', ')}` },
    ]);
  }
  let names: Set<string> | undefined;
  if (q.names !== undefined) {
    const list = nameList(q.names);
    if (!list.length) throw fieldError('names', 'must name at least one tool');
    const unknown = list.filter((n) => !tools.has(n));
    if (unknown.length) throw unknownNames('names', 'tools', unknown, [...tools.keys()]);
    names = new Set(list);
  }
  // The connectors the connection filters leave; undefined: no connection filter.
  let allowed: Set<string> | undefined;
  let granted: Map<string, Array<{ account: Account; auth: AuthSpec }>> | undefined;
  if (q.granted_scopes_only !== undefined && q.identifier === undefined)
    throw fieldError('granted_scopes_only', 'applies with identifier only');
  if (q.connection_names !== undefined || q.identifier !== undefined) {
    const all = await s.store.listConnections();
    let chosen: Connection[] = all;
    if (q.connection_names !== undefined) {
      const list = nameList(q.connection_names);
      if (!list.length) throw fieldError('connection_names', 'must name at least one connection');
      const known = all.map((c) => c.name);
      const unknown = list.filter((n) => !known.includes(n));
      if (unknown.length) throw unknownNames('connection_names', 'connections', unknown, known);
      chosen = all.filter((c) => list.includes(c.name));
    }
    if (q.identifier !== undefined) {
      const active = (await accountsOf(s, q.identifier)).filter((a) => a.status === 'ACTIVE');
      const ids = new Set(active.map((a) => a.connectionId));
      chosen = chosen.filter((c) => ids.has(c.id));
      if (q.granted_scopes_only === true) {
        // Per connector, the ACTIVE accounts with their auth: a tool stays if one of them was granted its scopes.
        const byId = new Map(chosen.map((c) => [c.id, c]));
        granted = new Map();
        for (const a of active) {
          const c = byId.get(a.connectionId);
          const connector = c && connectors.get(c.connector);
          if (!c || !connector) continue;
          const list = granted.get(c.connector) ?? [];
          list.push({ account: a, auth: authFor(connector, accountAuthKind(c, a)) });
          granted.set(c.connector, list);
        }
      }
    }
    allowed = new Set(chosen.map((c) => c.connector));
  }
  return [...tools.values()].filter(
    (t) =>
      (q.connector === undefined || t.connector === q.connector) &&
      (!names || names.has(t.name)) &&
      (!allowed || allowed.has(t.connector)) &&
      (!granted || (granted.get(t.connector) ?? []).some((g) => !missingScopes(g.account, t, g.auth).length)),
  );
}

/** `GET /v1/tools`: the service's own view of each tool (`view`), or the tools in one vendor's shape. */
export async function listTools(
  s: Services,
  q: ListToolsQuery,
  view: (t: ToolDefinition) => Extract<ListToolsResponse, { tools: unknown; count: number }>['tools'][number],
): Promise<ListToolsResponse> {
  const format = q.format || undefined;
  if (q.strict !== undefined && format !== 'openai' && format !== 'openai-strict')
    throw fieldError('strict', 'applies to format=openai only');
  if (q.api && format !== 'openai' && format !== 'openai-strict')
    throw fieldError('api', 'applies to format=openai or openai-strict only');
  if (format === 'openai-strict' && q.strict === false)
    throw fieldError('strict', 'cannot be false with format=openai-strict');
  const list = await selectTools(s, q);
  const count = list.length;
  switch (format) {
    case undefined:
      return { tools: list.map((t) => view(t) as never), count };
    case 'openai':
    case 'openai-strict': {
      const strict = format === 'openai-strict' || q.strict === true;
      const shown = strict ? 'openai-strict' : 'openai';
      if (q.api === 'responses') {
        return {
          format: shown,
          api: 'responses',
          tools: list.map((t) => llmTool(t, 'openai', { strict, api: 'responses' }) as never),
          count,
        };
      }
      return { format: shown, api: 'chat', tools: list.map((t) => llmTool(t, 'openai', { strict }) as never), count };
    }
    case 'gemini':
      return {
        format,
        tools: count ? [{ functionDeclarations: list.map((t) => geminiFunctionDeclaration(t) as never) }] : [],
        count,
      };
    case 'anthropic':
      return { format, tools: list.map((t) => llmTool(t, format) as never), count };
    case 'mcp':
      return {
        format,
        tools: list.map((t) => {
          const icons = mcpIcons(connectors.get(t.connector), s.config.publicUrl);
          return (icons ? { ...llmTool(t, format), icons } : llmTool(t, format)) as never;
        }),
        count,
      };
  }
}

/**
 * The connection a tool call runs on when the caller names only the end user: the one connection of the tool's
 * connector where that identifier has an account (an ACTIVE one, when there are several).
 */
export async function connectionForTool(s: Services, toolName: string, identifier: string): Promise<string> {
  const tool = getTool(toolName);
  // An unknown tool is the executor's to report (404 with a suggestion).
  if (!tool) return '';
  const ofConnector = (await s.store.listConnections()).filter((c) => c.connector === tool.connector);
  if (!ofConnector.length) {
    throw new ServiceError(
      404,
      'connection_not_found',
      `No connection uses the ${tool.connector} connector, which ${tool.name} belongs to`,
      [{ field: 'connection_name', message: `no connection of the ${tool.connector} connector exists` }],
    );
  }
  const ids = new Map(ofConnector.map((c) => [c.id, c]));
  const accounts = (await accountsOf(s, identifier)).filter((a) => ids.has(a.connectionId));
  // The one connection of the connector: the call runs there, and a user without an account gets a link to connect.
  if (!accounts.length && ofConnector.length === 1) return ofConnector[0]!.name;
  if (!accounts.length) {
    throw new ServiceError(
      404,
      'account_not_found',
      `No connected account "${identifier}" on a connection of the ${tool.connector} connector (${ofConnector.map((c) => c.name).join(', ')})`,
    );
  }
  if (accounts.length === 1) return ids.get(accounts[0]!.connectionId)!.name;
  const active = accounts.filter((a) => a.status === 'ACTIVE');
  if (active.length === 1) return ids.get(active[0]!.connectionId)!.name;
  const names = (active.length ? active : accounts).map((a) => ids.get(a.connectionId)!.name);
  throw new ServiceError(
    400,
    'ambiguous_connection',
    `"${identifier}" has accounts on several ${tool.connector} connections (${names.join(', ')}); give connection_name`,
    [{ field: 'connection_name', message: `is required: one of ${names.join(', ')}` }],
  );
}

/** A model's arguments in a tool format, as the tool's own input; what cannot be read is a 400 naming the field. */
export function inputFromFormat(toolName: string, format: InputFormat, toolInput: unknown): unknown {
  const tool = getTool(toolName);
  if (!tool) return toolInput;
  const [vendor, strict]: [LlmFormat, boolean] = format === 'openai-strict' ? ['openai', true] : [format, false];
  const { input, errors } = inputFromModel(tool, vendor, toolInput, { strict });
  if (errors.length)
    throw invalidInput(
      errors.map((e): FieldError => e),
      `input for ${tool.name}`,
    );
  return input;
}
