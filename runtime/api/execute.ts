import type { ServerResponse } from 'node:http';
import type { Services } from '../services.ts';
import { checkBody } from './input.ts';

/**
 * `POST /v1/tools/execute`. Served on the service's fast path (see runtime/server.ts): the body arrives
 * parsed by the same JSON parser the rest of the API uses.
 */
export async function executeTool(s: Services, rawBody: unknown, res: ServerResponse): Promise<void> {
  const body = checkBody<{
    tool_name: string;
    tool_input?: unknown;
    connected_account_id?: string;
    connection_name?: string;
    identifier?: string;
    dry_run?: boolean;
  }>(
    rawBody,
    {
      tool_name: { kind: 'string', required: true, maxLength: 200 },
      tool_input: { kind: 'object' },
      connected_account_id: { kind: 'string', maxLength: 200 },
      connection_name: { kind: 'string', maxLength: 200 },
      identifier: { kind: 'string', maxLength: 255 },
      dry_run: { kind: 'boolean' },
    },
    'a tool execution',
  );
  const result = await s.executor.execute({
    toolName: body.tool_name,
    input: body.tool_input ?? {},
    dryRun: body.dry_run === true,
    account: {
      connectedAccountId: body.connected_account_id,
      connectionName: body.connection_name,
      identifier: body.identifier,
    },
  });
  // The provider's JSON passes through as it came when it can; otherwise the result is serialized.
  const payload =
    result.dataJson !== undefined
      ? `{"data":${result.dataJson},"execution_id":${JSON.stringify(result.executionId)}}`
      : JSON.stringify({ data: result.data, execution_id: result.executionId });
  res.writeHead(200, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
  });
  res.end(payload);
}
