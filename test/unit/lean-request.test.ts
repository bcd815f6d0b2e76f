import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { checkServerIdentity } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clientFor, leanRequest } from '../../runtime/upstream/got-client.ts';

/**
 * got's `request` function (runtime/upstream/got-client.ts, `leanRequest`): node gets one small options object instead
 * of the URL and got's options, and must put the same bytes on the wire, on the same pooled connection. A raw TCP
 * server records each request's head as it arrived, with the connection it came on.
 */
interface Seen {
  connection: number;
  head: string;
}
const seen: Seen[] = [];
let connections = 0;
const server = net.createServer((socket) => {
  const connection = ++connections;
  let buffered = '';
  socket.on('data', (chunk) => {
    buffered += chunk.toString('latin1');
    for (let end = buffered.indexOf('\r\n\r\n'); end >= 0; end = buffered.indexOf('\r\n\r\n')) {
      seen.push({ connection, head: buffered.slice(0, end) });
      buffered = buffered.slice(end + 4);
      socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}');
    }
  });
});
let port = 0;
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => server.close());

/** An agent that connects every request to the recording server, whatever host and port the request names. */
function agentTo<T extends http.Agent>(agent: T): T {
  (agent as unknown as { createConnection: () => net.Socket }).createConnection = () => net.connect(port, '127.0.0.1');
  return agent;
}
const agents: http.Agent[] = [];
afterEach(() => {
  for (const a of agents.splice(0)) a.destroy();
});
const httpAgent = () => {
  const a = agentTo(new http.Agent({ keepAlive: true }));
  agents.push(a);
  return a;
};

/** The options got hands `http.request` for one of the service's requests (what `createNativeRequestOptions` keeps). */
const gotOptions = (agent: http.Agent, extra: Record<string, unknown> = {}) => ({
  checkServerIdentity,
  agent,
  setHost: true,
  method: 'GET',
  headers: { accept: 'application/json', authorization: 'Bearer t', 'accept-encoding': 'gzip, deflate, br' },
  ...extra,
});

/** Sends one request made by `make` and waits for its answer; returns the head the server recorded. */
function exchange(make: () => http.ClientRequest): Promise<Seen> {
  return new Promise((resolve, reject) => {
    const before = seen.length;
    const req = make();
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(seen[before]!));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Counts node's `http.request` and `https.request` calls by how many arguments they were given. */
function countCalls() {
  const calls: number[] = [];
  const originals = [http.request, https.request] as const;
  for (const m of [http, https])
    (m as { request: (...a: unknown[]) => unknown }).request = function (this: unknown, ...args: unknown[]) {
      calls.push(args.length);
      return (m === http ? originals[0] : originals[1]).apply(this, args as never);
    };
  return {
    calls,
    restore: () => {
      http.request = originals[0];
      https.request = originals[1];
    },
  };
}

describe('leanRequest', () => {
  const urls = [
    'http://provider.example/api/v2/tickets/123?include=users&x=%20y',
    'http://provider.example:8080/a/b/?q=1',
    'http://127.0.0.1:9/just/a/path',
    'http://[::1]:8443/v6?z=1',
    'http://[2001:db8::1]/default-port',
    'http://provider.example/%E2%9C%93/%2F?q=%26',
  ];
  for (const url of urls) {
    it(`sends what node sends for the URL and got's options: ${url}`, async () => {
      const agent = httpAgent();
      const node = await exchange(() => http.request(new URL(url), gotOptions(agent)));
      const lean = await exchange(() => leanRequest(new URL(url), gotOptions(agent)));
      expect(lean.head).toBe(node.head);
      // The same pool: the second request went out on the first one's connection.
      expect(lean.connection).toBe(node.connection);
    });
  }

  it('leaves the default port out of the Host header for https too, and pools by host and port', async () => {
    const agent = agentTo(new https.Agent({ keepAlive: true }));
    agents.push(agent);
    const url = new URL('https://api.provider.example/v1/things?limit=5');
    // The recording server speaks plain HTTP: the agent's connection is a plain socket, as above.
    const node = await exchange(() => https.request(url, gotOptions(agent)));
    const lean = await exchange(() => leanRequest(url, gotOptions(agent)));
    expect(lean.head).toBe(node.head);
    expect(lean.head).toMatch(/\r\nHost: api\.provider\.example\r\n/);
    expect(lean.connection).toBe(node.connection);
    expect(Object.keys(agent.freeSockets)).toEqual([agent.getName({ host: 'api.provider.example', port: 443 })]);
  });

  it('sends a request that carries anything else as got would: node gets the URL and every option', async () => {
    const agent = httpAgent();
    const spy = countCalls();
    try {
      await exchange(() => leanRequest(new URL('http://provider.example/plain'), gotOptions(agent)));
      await exchange(() =>
        leanRequest(new URL('http://provider.example/tls'), gotOptions(agent, { rejectUnauthorized: false })),
      );
      await exchange(() =>
        leanRequest(new URL('http://provider.example/no-host'), gotOptions(agent, { setHost: false })),
      );
      await exchange(() => leanRequest(new URL('http://user:pass@provider.example/creds'), gotOptions(agent)));
    } finally {
      spy.restore();
    }
    expect(spy.calls).toEqual([1, 2, 2, 2]);
    // setHost: false reached node: no Host header.
    expect(seen.at(-2)!.head).not.toMatch(/\r\nHost:/i);
    expect(seen.at(-1)!.head).toMatch(/^GET \/creds HTTP\/1\.1\r\n/);
  });

  it("is what the service's got client sends with", async () => {
    const spy = countCalls();
    try {
      const stream = clientFor(5_000, 5_000, false, true).stream(`http://127.0.0.1:${port}/through-got?a=1`, {
        method: 'GET',
        headers: { accept: 'application/json' },
      });
      await new Promise<void>((resolve, reject) => {
        stream.on('data', () => {});
        stream.on('end', resolve);
        stream.on('error', reject);
      });
    } finally {
      spy.restore();
    }
    expect(spy.calls).toEqual([1]);
    expect(seen.at(-1)!.head).toMatch(/^GET \/through-got\?a=1 HTTP\/1\.1\r\n/);
    expect(seen.at(-1)!.head).toMatch(new RegExp(`\\r\\nHost: 127\\.0\\.0\\.1:${port}\\r\\n`));
  });
});
