import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendOnce, type SendOptions } from '../../runtime/upstream/http.ts';

/**
 * `sendOnce` on got's stream API (runtime/upstream/http.ts): what the buffered exchange must still do. The fake
 * provider records each request it receives.
 */
const seen: Array<{ method?: string; url?: string; body: string }> = [];
let base = '';
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    seen.push({ method: req.method, url: req.url, body: Buffer.concat(chunks).toString() });
    if (req.url === '/gone') {
      res.writeHead(204).end();
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
    expect(seen.at(-1)).toEqual({ method: 'DELETE', url: '/gone', body: '' });
  });

  it('sends a body and buffers the answer, status and headers included', async () => {
    const res = await sendOnce(
      { method: 'POST', url: `${base}/items?x=1`, headers: { 'content-type': 'application/json' }, body: '{"a":1}' },
      opts,
    );
    expect(res.status).toBe(201);
    expect(res.headers['content-type']).toBe('application/json');
    expect(JSON.parse(res.body.toString())).toEqual({ method: 'POST' });
    expect(seen.at(-1)).toEqual({ method: 'POST', url: '/items?x=1', body: '{"a":1}' });
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
});
