/**
 * The wire-level parsing of the MCP client: SSE bodies from Streamable HTTP servers, and the Bearer challenge
 * that points at the protected-resource metadata.
 */
import { describe, expect, it } from 'vitest';
import { parseSse } from '../../core/sse.ts';
import { bearerChallengeParams } from '../../runtime/oauth/mcp-auth.ts';

describe('parseSse', () => {
  it('returns every JSON-RPC message in order, notifications included, ignoring comments and other fields', () => {
    const body = [
      ': keepalive',
      '',
      'event: message',
      'id: 1',
      'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}',
      '',
      'retry: 1000',
      'data: ',
      '',
      'event: message',
      'data: {"jsonrpc":"2.0","id":7,',
      'data: "result":{"content":[{"type":"text","text":"a: b\\n\\nc"}]}}',
      '',
    ].join('\n');
    expect(parseSse(body)).toEqual([
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: 1 } },
      { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'a: b\n\nc' }] } },
    ]);
  });

  it('accepts CRLF line ends, data without the optional space, and batches', () => {
    const body =
      'data:[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"nope"}}]\r\n\r\n';
    expect(parseSse(body).map((m) => m.id)).toEqual([1, 2]);
  });

  it('skips events whose data is not JSON', () => {
    expect(parseSse('data: hello\n\ndata: {"jsonrpc":"2.0","id":3,"result":{}}\n\n')).toEqual([
      { jsonrpc: '2.0', id: 3, result: {} },
    ]);
  });
});

describe('bearerChallengeParams', () => {
  it('reads quoted and token parameters of the Bearer challenge', () => {
    const header =
      'Bearer error="invalid_token", error_description="Missing \\"Authorization\\" header", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope=notes.read';
    expect(bearerChallengeParams(header)).toEqual({
      error: 'invalid_token',
      error_description: 'Missing "Authorization" header',
      resource_metadata: 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp',
      scope: 'notes.read',
    });
  });

  it('finds the Bearer challenge among others, and nothing when there is none', () => {
    expect(
      bearerChallengeParams('DPoP algs="ES256", Bearer resource_metadata="https://x.test/m"').resource_metadata,
    ).toBe('https://x.test/m');
    expect(bearerChallengeParams('Basic realm="x"')).toEqual({});
    expect(bearerChallengeParams('')).toEqual({});
  });
});
