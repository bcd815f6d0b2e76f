import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { gzipSync } from 'node:zlib';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonBody } from '../../runtime/api/json-body.ts';

/**
 * The API's JSON body parser (runtime/api/json-body.ts) against body-parser itself: the same bytes sent to a
 * route parsed by each give the same body, or the same error (status, type, message). The fast path must be
 * taken where it should: its fallback counts the requests it gets.
 */
type Middleware = (req: http.IncomingMessage, res: http.ServerResponse, next: (err?: unknown) => void) => void;
const LIMIT = 1000;
const bodyParser = express.json({ limit: LIMIT, strict: true }) as Middleware;
let fallbacks = 0;
const ours = jsonBody(LIMIT, true, (req, res, next) => {
  fallbacks++;
  bodyParser(req, res, next);
});

type Outcome = { body?: unknown; error?: { status: unknown; type: unknown; message: unknown } };
const server = http.createServer((req, res) => {
  const parse = req.url === '/ours' ? ours : bodyParser;
  parse(req, res, (err) => {
    const e = err as { status?: number; type?: string; message?: string } | undefined;
    const outcome: Outcome = e
      ? { error: { status: e.status, type: e.type, message: e.message } }
      : { body: (req as { body?: unknown }).body };
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(outcome === undefined ? null : outcome));
  });
});
/** Starts `s` on a free port before the suite's tests (or the enclosing describe's) and closes it after them. */
function listening(s: http.Server): { port: number } {
  const at = { port: 0 };
  beforeAll(async () => {
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    at.port = (s.address() as AddressInfo).port;
  });
  afterAll(() => {
    s.closeAllConnections();
    s.close();
  });
  return at;
}
const at = listening(server);

/** Sends `body` with `headers` to one parser; `declared` overrides the Content-Length sent (the socket then ends). */
function send(path: string, body: Buffer, headers: Record<string, string>): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: at.port, path, method: 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve(JSON.parse(text) as Outcome));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function both(body: Buffer | string, type: string | undefined, extra: Record<string, string> = {}) {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const headers: Record<string, string> = { ...extra };
  if (type !== undefined) headers['content-type'] = type;
  if (!headers['transfer-encoding']) headers['content-length'] = String(bytes.length);
  const before = fallbacks;
  const theirs = await send('/body-parser', bytes, headers);
  const mine = await send('/ours', bytes, headers);
  return { theirs, mine, fast: fallbacks === before };
}

describe('jsonBody: the fast path gives what body-parser gives', () => {
  const cases: Array<[string, Buffer | string, string]> = [
    ['an object', '{"a":1,"b":[1,2,{"c":null}]}', 'application/json'],
    ['an array, with charset=utf-8', '[1,"two",3.5]', 'application/json; charset=utf-8'],
    ['upper-case type and charset', '{"x":true}', 'Application/JSON;charset=UTF-8'],
    ['a byte order mark', '\ufeff{"bom":1}', 'application/json'],
    ['UTF-8 beyond ASCII', '{"name":"Zoë 漢字 🙂"}', 'application/json'],
    [
      'bytes that are not UTF-8',
      Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      'application/json',
    ],
    ['an empty body', '', 'application/json'],
    ['whitespace before the object', ' \n\t{"a":1}', 'application/json'],
    ['a string (strict)', '"text"', 'application/json'],
    ['true after spaces (strict)', '   true', 'application/json'],
    ['whitespace only (strict)', '   ', 'application/json'],
    ['a number (strict)', '12', 'application/json'],
    ['a body that ends too early', '{"a":', 'application/json'],
    ['a bad token', '{"a":x}', 'application/json'],
    ['a trailing comma', '{"a":1,}', 'application/json'],
    ['text after the value', '{"a":1} {"b":2}', 'application/json'],
  ];
  for (const [name, body, type] of cases) {
    it(`${name}: same outcome, on the fast path`, async () => {
      const { theirs, mine, fast } = await both(body, type);
      expect(mine).toEqual(theirs);
      expect(fast).toBe(true);
    });
  }

  it('parses into the same value body-parser does (a deep object)', async () => {
    const value = { a: [1, { b: 'c', d: [true, false, null] }], e: 'ü'.repeat(100) };
    const { theirs, mine } = await both(JSON.stringify(value), 'application/json');
    expect(mine).toEqual({ body: value });
    expect(theirs).toEqual({ body: value });
  });
});

describe('jsonBody: what it leaves to body-parser', () => {
  const cases: Array<[string, Buffer | string, string | undefined, Record<string, string>?]> = [
    ['another media type', '{"a":1}', 'text/plain'],
    ['no Content-Type', '{"a":1}', undefined],
    ['a +json type', '{"a":1}', 'application/vnd.api+json'],
    ['a charset other than UTF-8', '{"a":1}', 'application/json; charset=latin1'],
    ['UTF-16', Buffer.from('\ufeff{"a":1}', 'utf16le'), 'application/json; charset=utf-16'],
    ['a gzip body', gzipSync('{"zipped":true}'), 'application/json', { 'content-encoding': 'gzip' }],
    ['a chunked body', '{"chunked":1}', 'application/json', { 'transfer-encoding': 'chunked' }],
    ['a body over the limit', `{"a":"${'x'.repeat(LIMIT)}"}`, 'application/json'],
  ];
  for (const [name, body, type, extra] of cases) {
    it(`${name}: body-parser's outcome`, async () => {
      const { theirs, mine, fast } = await both(body, type, extra);
      expect(mine).toEqual(theirs);
      expect(fast).toBe(false);
    });
  }
});

describe('jsonBody: a body that does not arrive whole', () => {
  it('answers 400 when the client stops before the declared length, as body-parser does', async () => {
    const outcome = async (path: string) => {
      const socket = net.connect(at.port, '127.0.0.1');
      await new Promise((r) => socket.once('connect', r));
      socket.end(
        `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{"a":1`,
      );
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (c: string) => (text += c));
      await new Promise((r) => socket.once('close', r));
      return text;
    };
    // The client half-closed its side: each parser sees the body end short and reports it (or the connection is
    // gone before it can); neither may hang or take the short body as the whole.
    const [theirs, mine] = [await outcome('/body-parser'), await outcome('/ours')];
    expect(mine.includes('"body"')).toBe(false);
    expect(theirs.includes('"body"')).toBe(false);
  });
});

describe('jsonBody: a body that came with its headers, and one that comes later', () => {
  /**
   * A server on `ours` that records, for each request, whether `next` ran before the parser returned. Like the API's
   * router, it runs the parser a microtask after the 'request' event, when node has parsed what came with the headers.
   */
  const timing: Array<{ sync: boolean; body: unknown }> = [];
  const timed = http.createServer((req, res) => queueMicrotask(() => parseTimed(req, res)));
  const parseTimed = (req: http.IncomingMessage, res: http.ServerResponse) => {
    let returned = false;
    ours(req, res, (err) => {
      timing.push({
        sync: !returned,
        body: err ? { error: (err as Error).message } : (req as { body?: unknown }).body,
      });
      res.setHeader('content-type', 'application/json');
      res.end('{}');
    });
    returned = true;
  };
  const timedAt = listening(timed);

  /** Writes raw requests on one connection, each after the answer to the one before; returns the answers' count. */
  async function onOneConnection(parts: string[][], pauseMs = 0): Promise<number> {
    const socket = net.connect(timedAt.port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    let answers = 0;
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      text += c;
      answers = text.split('HTTP/1.1 200 OK').length - 1;
    });
    for (const [i, request] of parts.entries()) {
      for (const [j, part] of request.entries()) {
        if (j > 0) await new Promise((r) => setTimeout(r, pauseMs));
        socket.write(part);
      }
      while (answers < i + 1) await new Promise((r) => setTimeout(r, 5));
    }
    socket.end();
    return answers;
  }
  const head = (length: number) =>
    `POST /t HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

  it('parses a body that arrived with its headers before the parser returns, and the connection carries on', async () => {
    timing.length = 0;
    const bodies = ['{"first":1}', '{"second":"ü"}', ''];
    const answers = await onOneConnection(bodies.map((b) => [head(Buffer.byteLength(b)) + b]));
    expect(answers).toBe(3);
    expect(timing).toEqual([
      { sync: true, body: { first: 1 } },
      { sync: true, body: { second: 'ü' } },
      { sync: true, body: {} },
    ]);
  });

  it('waits for a body that arrives after its headers, in parts, and parses it whole', async () => {
    timing.length = 0;
    const body = '{"late":[1,2,3]}';
    const answers = await onOneConnection([[head(body.length), body.slice(0, 5), body.slice(5)], [head(2) + '{}']], 30);
    expect(answers).toBe(2);
    expect(timing).toEqual([
      { sync: false, body: { late: [1, 2, 3] } },
      { sync: true, body: {} },
    ]);
  });
});
