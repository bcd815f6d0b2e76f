import {
  create,
  fromJson,
  toJson,
  type DescMessage,
  type JsonValue,
  type MessageInitShape,
  type MessageShape,
} from '@bufbuild/protobuf';
import { ServiceError } from '../../core/errors.ts';
import type { Services } from '../services.ts';
import { ScalekitCalls } from './calls.ts';
import {
  CreateConnectedAccountRequestSchema,
  CreateConnectedAccountResponseSchema,
  DeleteConnectedAccountRequestSchema,
  DeleteConnectedAccountResponseSchema,
  ExecuteToolRequestSchema,
  ExecuteToolResponseSchema,
  GetConnectedAccountByIdentifierRequestSchema,
  GetConnectedAccountByIdentifierResponseSchema,
  GetMagicLinkForConnectedAccountRequestSchema,
  GetMagicLinkForConnectedAccountResponseSchema,
  ListAppConnectionsRequestSchema,
  ListAppConnectionsResponseSchema,
  ListConnectedAccountsRequestSchema,
  ListConnectedAccountsResponseSchema,
  ListToolsRequestSchema,
  ListToolsResponseSchema,
  UpdateConnectedAccountRequestSchema,
  UpdateConnectedAccountResponseSchema,
  VerifyConnectedAccountUserRequestSchema,
  VerifyConnectedAccountUserResponseSchema,
} from './descriptors.ts';

/** A body or query the message's JSON mapping refuses, as the service's invalid_input naming the field. */
function decodeError(e: unknown, what: string): ServiceError {
  const message = (e as Error).message ?? String(e);
  const field =
    /key "([^"]+)" is unknown/.exec(message)?.[1] ??
    /cannot decode field [\w.]+\.(\w+) from JSON/.exec(message)?.[1] ??
    /field (\w+)/.exec(message)?.[1] ??
    'body';
  const detail = message.replace(/^cannot decode (message|field) [\w.]+( from JSON)?: ?/, '') || 'is invalid';
  return new ServiceError(400, 'invalid_input', `Invalid ${what}: ${field} ${detail}`, [{ field, message: detail }]);
}

/**
 * Scalekit's AgentKit REST shape: each `/api/v1/…` endpoint decodes its body (or query) with the message's JSON
 * mapping, calls the same ScalekitCalls the gRPC services call, and answers the response message as snake_case
 * JSON. Errors are the service's REST errors (the route table renders them).
 */
export function scalekitRest(s: Services) {
  const calls = new ScalekitCalls(s);
  const run = async <I extends DescMessage, O extends DescMessage>(
    input: I,
    output: O,
    json: unknown,
    fn: (r: MessageShape<I>) => Promise<MessageInitShape<O>>,
    what = 'request body',
  ): Promise<{ body: { [key: string]: unknown } }> => {
    let request: MessageShape<I>;
    try {
      request = fromJson(input, (json ?? {}) as JsonValue);
    } catch (e) {
      throw decodeError(e, what);
    }
    const reply = await fn(request);
    return { body: toJson(output, create(output, reply), { useProtoFieldName: true }) as { [key: string]: unknown } };
  };
  const defined = (o: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== ''));
  const list = (v: string | undefined) =>
    v
      ? v
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean)
      : undefined;
  return {
    listConnectedAccounts: (q: Record<string, unknown>) =>
      run(
        ListConnectedAccountsRequestSchema,
        ListConnectedAccountsResponseSchema,
        defined(q),
        calls.listConnectedAccounts.bind(calls),
        'query',
      ),
    createConnectedAccount: (b: unknown) =>
      run(
        CreateConnectedAccountRequestSchema,
        CreateConnectedAccountResponseSchema,
        b,
        calls.createConnectedAccount.bind(calls),
      ),
    updateConnectedAccount: (b: unknown) =>
      run(
        UpdateConnectedAccountRequestSchema,
        UpdateConnectedAccountResponseSchema,
        b,
        calls.updateConnectedAccount.bind(calls),
      ),
    deleteConnectedAccount: (b: unknown) =>
      run(
        DeleteConnectedAccountRequestSchema,
        DeleteConnectedAccountResponseSchema,
        b,
        calls.deleteConnectedAccount.bind(calls),
      ),
    magicLink: (b: unknown) =>
      run(
        GetMagicLinkForConnectedAccountRequestSchema,
        GetMagicLinkForConnectedAccountResponseSchema,
        b,
        calls.getMagicLinkForConnectedAccount.bind(calls),
      ),
    verify: (b: unknown) =>
      run(
        VerifyConnectedAccountUserRequestSchema,
        VerifyConnectedAccountUserResponseSchema,
        b,
        calls.verifyConnectedAccountUser.bind(calls),
      ),
    getConnectedAccountAuth: (q: Record<string, unknown>) =>
      run(
        GetConnectedAccountByIdentifierRequestSchema,
        GetConnectedAccountByIdentifierResponseSchema,
        defined(q),
        calls.getConnectedAccountAuth.bind(calls),
        'query',
      ),
    executeTool: (b: unknown) =>
      run(ExecuteToolRequestSchema, ExecuteToolResponseSchema, b, calls.executeTool.bind(calls)),
    listTools: (q: {
      provider?: string;
      connector?: string;
      identifier?: string;
      tool_name?: string;
      query?: string;
      summary?: boolean;
      page_size?: number;
      page_token?: string;
    }) =>
      run(
        ListToolsRequestSchema,
        ListToolsResponseSchema,
        defined({
          filter: defined({
            provider: q.provider,
            connector: q.connector,
            identifier: q.identifier,
            tool_name: list(q.tool_name),
            query: q.query,
            summary: q.summary,
          }),
          page_size: q.page_size,
          page_token: q.page_token,
        }),
        calls.listTools.bind(calls),
        'query',
      ),
    listAppConnections: (q: Record<string, unknown>) =>
      run(
        ListAppConnectionsRequestSchema,
        ListAppConnectionsResponseSchema,
        defined(q),
        calls.listAppConnections.bind(calls),
        'query',
      ),
  };
}
