/**
 * The wire-level reading of the MCP client: the reply to a request in a JSON or SSE answer (read as the MCP SDK's
 * transport reads it), and the Bearer challenge that points at the protected-resource metadata.
 */
import { describe, expect, it } from 'vitest';
import { findReply } from '../../runtime/upstream/mcp.ts';
import { bearerChallengeParams } from '../../runtime/oauth/mcp-auth.ts';
import { UpstreamFailure } from '../../core/errors.ts';

const SSE = 'text/event-stream';

async function refusal(p: Promise<unknown>): Promise<UpstreamFailure> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(UpstreamFailure);
  return e as UpstreamFailure;
}

describe('findReply', () => {
  it('finds the reply in an event stream, past notifications, comments, other fields and multi-line data', async () => {
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
      '',
    ].join('\n');
    expect(await findReply(body, SSE, 7)).toEqual({
      jsonrpc: '2.0',
      id: 7,
      result: { content: [{ type: 'text', text: 'a: b\n\nc' }] },
    });
  });

  it('accepts CRLF line ends, data without the optional space, a charset, and skips events that are not JSON', async () => {
    const body = 'data: hello\r\n\r\ndata:{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"nope"}}\r\n\r\n';
    expect(await findReply(body, 'text/event-stream; charset=utf-8', 2)).toEqual({
      jsonrpc: '2.0',
      id: 2,
      error: { code: -32601, message: 'nope' },
    });
  });

  it('reads the reply out of a JSON answer, one message or a batch', async () => {
    expect(await findReply('{"jsonrpc":"2.0","id":3,"result":{}}', 'application/json', 3)).toEqual({
      jsonrpc: '2.0',
      id: 3,
      result: {},
    });
    const batch =
      '[{"jsonrpc":"2.0","method":"notifications/message","params":{}},{"jsonrpc":"2.0","id":4,"result":{}}]';
    expect(await findReply(batch, 'application/json', 4)).toMatchObject({ id: 4 });
  });

  it('refuses an answer without the reply, with a reply that is not JSON-RPC, or that is not JSON or SSE', async () => {
    const otherId = await refusal(findReply('{"jsonrpc":"2.0","id":"other","result":{}}', 'application/json', 5));
    expect(otherId.message).toContain('no reply to request 5');
    // Only message events carry messages, and an event without its closing blank line never ended.
    const ping = await refusal(findReply('event: ping\ndata: {"jsonrpc":"2.0","id":5,"result":{}}\n\n', SSE, 5));
    expect(ping.code).toBe('provider_malformed_response');
    const unended = await refusal(findReply('data: {"jsonrpc":"2.0","id":5,"result":{}}', SSE, 5));
    expect(unended.code).toBe('provider_malformed_response');
    const notRpc = await refusal(findReply('{"jsonrpc":"2.0","id":5,"result":"yes"}', 'application/json', 5));
    expect(notRpc.message).toContain('not a JSON-RPC response');
    const cut = await refusal(findReply('{"jsonrpc":"2.0","id":5,', 'application/json', 5));
    expect(cut.message).toContain('malformed JSON');
    expect((await refusal(findReply('<html></html>', 'text/html', 5))).message).toContain('"text/html"');
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
