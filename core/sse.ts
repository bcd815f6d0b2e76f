/** Server-sent events as MCP's Streamable HTTP transport uses them: JSON-RPC messages in `data:` fields. */

export interface RpcMessage {
  jsonrpc: '2.0';
  id?: number | string;
  method?: string;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/** Extracts JSON-RPC messages from a text/event-stream body, ignoring comments and non-data fields. */
export function parseSse(text: string): RpcMessage[] {
  const out: RpcMessage[] = [];
  for (const event of text.split(/\r?\n\r?\n/)) {
    const data = event
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''))
      .join('\n');
    if (!data) continue;
    try {
      const msg = JSON.parse(data) as RpcMessage | RpcMessage[];
      out.push(...(Array.isArray(msg) ? msg : [msg]));
    } catch {
      // A non-JSON event is not a JSON-RPC message; skip it.
    }
  }
  return out;
}
