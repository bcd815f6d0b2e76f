import type { ServerResponse } from 'node:http';
import type { Operations } from '../../generated/api/types.ts';
import type { Services } from '../services.ts';
import { connectionForTool, inputFromFormat } from './agent-tools.ts';

/**
 * `POST /v1/tools/execute`, with a body the route table has parsed and checked. The provider's JSON passes
 * through as it came when it can, so the answer is written here rather than serialized again.
 */
export async function executeTool(
  s: Services,
  body: Operations['executeTool']['body'],
  res: ServerResponse,
): Promise<void> {
  const input = body.input_format
    ? inputFromFormat(body.tool_name, body.input_format, body.tool_input ?? {})
    : (body.tool_input ?? {});
  let connectionName = body.connection_name ?? undefined;
  // The end user alone: the account on the connection of the tool's connector.
  if (!connectionName && !body.connected_account_id && body.identifier != null)
    connectionName = (await connectionForTool(s, body.tool_name, body.identifier)) || undefined;
  const result = await s.executor.execute({
    toolName: body.tool_name,
    input,
    dryRun: body.dry_run === true,
    // The request its authentication polled the change feed for: the account reads need no second look.
    scope: res.req,
    // An end user who must connect first: 403 authorization_required with a link (docs/connect.md).
    authorization: {},
    account: {
      connectedAccountId: body.connected_account_id ?? undefined,
      connectionName,
      identifier: body.identifier ?? undefined,
    },
  });
  const warnings = result.warnings?.length ? `,"warnings":${JSON.stringify(result.warnings)}` : '';
  const payload =
    result.dataJson !== undefined
      ? `{"data":${result.dataJson},"execution_id":${JSON.stringify(result.executionId)}${warnings}}`
      : JSON.stringify({
          data: result.data,
          execution_id: result.executionId,
          ...(result.warnings?.length ? { warnings: result.warnings } : {}),
        });
  res.writeHead(200, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
  });
  res.end(payload);
}
