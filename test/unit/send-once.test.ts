import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFor, type ExchangeOptions } from '../../runtime/upstream/got-client.ts';
import { sendOnce, type HttpRequest, type SendOptions } from '../../runtime/upstream/http.ts';

/**
 * `sendOnce` on got's stream API (runtime/upstream/http.ts): what the buffered exchange must still do. The fake
 * provider records each request it receives.
 */
const seen: Array<{ method?: string; url?: string; body: string; headers?: http.IncomingHttpHeaders }> = [];
let base = '';
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    seen.push({ method: req.method, url: req.url, body: Buffer.concat(chunks).toString(), headers: req.headers });
    if (req.url === '/gone') {
      res.writeHead(204).end();
    } else if (req.url === '/stall') {
      // Headers and part of the body, then nothing: the connection stays open.
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1000' });
      res.write('s'.repeat(100));
    } else if (req.url === '/big-announced') {
      res.writeHead(200, { 'content-length': '5000' }).end('x'.repeat(5000));
    } else if (req.url === '/big-chunked') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('y'.repeat(3000));
      res.end('y'.repeat(3000));
    } else if (req.url === '/gzip-bomb') {
      const packed = gzipSync('z'.repeat(50_000));
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-length': String(packed.length) }).end(packed);
    } else {
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ method: req.method }));
    }
  });
});
const opts: SendOptions = { connectTimeoutMs: 5000, responseTimeoutMs: 5000, maxBytes: 4096, credentialHeaders: [] };

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

describe('sendOnce (got stream API, buffered)', () => {
  it('answers a DELETE without a body (its writable side is ended for it)', async () => {
    const res = await sendOnce({ method: 'DELETE', url: `${base}/gone`, headers: {} }, opts);
    expect(res.status).toBe(204);
    expect(res.body.length).toBe(0);
    expect(seen.at(-1)).toMatchObject({ method: 'DELETE', url: '/gone', body: '' });
  });

  it('sends a body and buffers the answer, status and headers included', async () => {
    const res = await sendOnce(
      { method: 'POST', url: `${base}/items?x=1`, headers: { 'content-type': 'application/json' }, body: '{"a":1}' },
      opts,
    );
    expect(res.status).toBe(201);
    expect(res.headers['content-type']).toBe('application/json');
    expect(JSON.parse(res.body.toString())).toEqual({ method: 'POST' });
    expect(seen.at(-1)).toMatchObject({ method: 'POST', url: '/items?x=1', body: '{"a":1}' });
  });

  it('refuses an answer whose Content-Length is over the limit, saying so', async () => {
    await expect(sendOnce({ method: 'GET', url: `${base}/big-announced`, headers: {} }, opts)).rejects.toMatchObject({
      code: 'response_too_large',
      message: expect.stringContaining('its Content-Length says 5000 bytes') as unknown,
    });
  });

  it('refuses an answer without a length once more than the limit has arrived', async () => {
    await expect(sendOnce({ method: 'GET', url: `${base}/big-chunked`, headers: {} }, opts)).rejects.toMatchObject({
      code: 'response_too_large',
    });
  });

  it('counts a compressed answer as it inflates: small on the wire, over the limit decompressed', async () => {
    await expect(sendOnce({ method: 'GET', url: `${base}/gzip-bomb`, headers: {} }, opts)).rejects.toMatchObject({
      code: 'response_too_large',
    });
    const roomy = await sendOnce(
      { method: 'GET', url: `${base}/gzip-bomb`, headers: {} },
      { ...opts, maxBytes: 60_000 },
    );
    expect(roomy.body.toString()).toBe('z'.repeat(50_000));
  });

  // The prebuilt client's options are shared by its calls (runtime/upstream/got-client.ts, PreparedClient).
  it('keeps each call to itself: method, URL, headers and body of one never reach the next', async () => {
    const calls: HttpRequest[] = [
      { method: 'POST', url: `${base}/a?k=1`, headers: { authorization: 'Bearer one', 'x-one': '1' }, body: 'first' },
      { method: 'GET', url: `${base}/b`, headers: { authorization: 'Bearer two' } },
      { method: 'PUT', url: `${base}/c`, headers: { 'x-three': '3' }, body: Buffer.from('third') },
      { method: 'DELETE', url: `${base}/gone`, headers: {} },
    ];
    const before = seen.length;
    // All four begin before any answer arrives: each is built while the others are in flight.
    const answers = await Promise.all(calls.map((c) => sendOnce(c, opts)));
    expect(answers.map((a) => a.status)).toEqual([201, 200, 200, 204]);
    const got = seen.slice(before).sort((x, y) => x.url!.localeCompare(y.url!));
    expect(got.map((r) => [r.method, r.url, r.body])).toEqual([
      ['POST', '/a?k=1', 'first'],
      ['GET', '/b', ''],
      ['PUT', '/c', 'third'],
      ['DELETE', '/gone', ''],
    ]);
    expect(got.map((r) => r.headers!.authorization)).toEqual(['Bearer one', 'Bearer two', undefined, undefined]);
    expect(got.map((r) => [r.headers!['x-one'], r.headers!['x-three']])).toEqual([
      ['1', undefined],
      [undefined, undefined],
      [undefined, '3'],
      [undefined, undefined],
    ]);
    expect(got.map((r) => r.headers!['content-length'])).toEqual(['5', undefined, '5', undefined]);
  });

  it("sends got's user agent unless the call gives one, as got's own option merge does", async () => {
    await sendOnce({ method: 'GET', url: `${base}/ua`, headers: {} }, opts);
    expect(seen.at(-1)!.headers!['user-agent']).toMatch(/^got /);
    await sendOnce({ method: 'GET', url: `${base}/ua`, headers: { 'User-Agent': 'acs/1' } }, opts);
    expect(seen.at(-1)!.headers!['user-agent']).toBe('acs/1');
  });

  it("sends the headers got adds (accept-encoding, a body's length) without got adding a key to its copy", async () => {
    // got copies the headers for each request and then adds these two to the copy if they are missing; a key added
    // to that copy gives it a hidden class of its own every time (got-client.ts, PreparedClient). So they must be
    // there before got copies them, with got's values, and the copy must end the request with the keys it began with.
    const client = clientFor(5000, 5000, false, true);
    const calls: ExchangeOptions[] = [
      { method: 'GET', headers: { accept: 'application/json' } },
      { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'héllo' },
      { method: 'PUT', headers: {}, body: Buffer.from('four') },
      { method: 'GET', headers: { 'accept-encoding': 'identity' } },
    ];
    const before = seen.length;
    for (const call of calls) {
      const request = client.stream(`${base}/keys`, call);
      const keys = Object.keys(request.options.headers);
      await new Promise<void>((resolve, reject) => {
        request.on('error', reject);
        request.on('end', resolve);
        request.resume();
      });
      expect(Object.keys(request.options.headers)).toEqual(keys);
    }
    const sent = seen.slice(before).map((r) => [r.headers!['accept-encoding'], r.headers!['content-length'], r.body]);
    expect(sent).toEqual([
      ['gzip, deflate, br', undefined, ''],
      ['gzip, deflate, br', '6', 'héllo'],
      ['gzip, deflate, br', '4', 'four'],
      ['identity', undefined, ''],
    ]);
  });

  it('fails a URL got cannot send to as an upstream error, and the next call still goes out', async () => {
    await expect(sendOnce({ method: 'GET', url: 'ftp://127.0.0.1/x', headers: {} }, opts)).rejects.toMatchObject({
      code: 'upstream_error',
      message: expect.stringContaining('ERR_UNSUPPORTED_PROTOCOL') as unknown,
    });
    const res = await sendOnce({ method: 'GET', url: `${base}/after`, headers: {} }, opts);
    expect(res.status).toBe(200);
    expect(seen.at(-1)).toMatchObject({ method: 'GET', url: '/after' });
  });

  it('ends a call when its AbortSignal fires', async () => {
    const controller = new AbortController();
    const pending = sendOnce(
      { method: 'GET', url: `${base}/big-chunked`, headers: {} },
      { ...opts, maxBytes: 60_000, signal: controller.signal },
    );
    controller.abort();
    await expect(pending).rejects.toMatchObject({
      code: 'upstream_error',
      message: expect.stringContaining('ERR_ABORTED') as unknown,
    });
    const res = await sendOnce({ method: 'GET', url: `${base}/after-abort`, headers: {} }, opts);
    expect(res.status).toBe(200);
  });

  it('ends an answer that stalls after its headers at the deadline, connect + response, and says so', async () => {
    const started = performance.now();
    await expect(
      sendOnce(
        { method: 'GET', url: `${base}/stall`, headers: {} },
        { ...opts, connectTimeoutMs: 200, responseTimeoutMs: 300 },
      ),
    ).rejects.toMatchObject({
      code: 'upstream_timeout',
      message: expect.stringMatching(
        /did not finish its answer in time \(request timeout after 500 ms\), after 100 bytes of the 1000/,
      ) as unknown,
    });
    expect(performance.now() - started).toBeGreaterThanOrEqual(490);
  });
});
