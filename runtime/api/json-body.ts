/**
 * The JSON body parser of the API's routes and of MCP: express.json (body-parser), with a fast path of its own
 * for the request nearly every client sends.
 *
 * body-parser reads every body through raw-body, decodes it with iconv-lite and checks its type with type-is,
 * whatever it is: about 5 % of a tool call's CPU in a profile. A body announced by
 * Content-Length, not compressed, of type `application/json` with no charset or UTF-8, is read here instead:
 * its chunks gathered, decoded as UTF-8 (a byte order mark dropped, as iconv-lite does), and parsed as
 * body-parser parses it (an empty body is `{}`; in strict mode the text must start with `{` or `[`). What is
 * refused is refused with the error body-parser gives, its `type` and status included, so the one error renderer
 * answers the same (runtime/api/respond.ts). Every other body — chunked, compressed, another charset or media
 * type — goes to body-parser as before. test/unit/json-body.test.ts holds the two side by side.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { loadOnFirstUse } from './load-on-first-use.ts';

export type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/**
 * A body parser of Express's (body-parser), loaded with the first request that needs it: Express and its parsers
 * were about 30 ms of every start, for bodies few requests send.
 */
export function expressParser(make: (e: typeof import('express')) => Middleware): Middleware {
  return loadOnFirstUse(async () => make((await import('express')).default));
}

/** The Content-Type values taken by the fast path, lower case. */
const PLAIN_JSON = new Set(['application/json', 'application/json; charset=utf-8', 'application/json;charset=utf-8']);
const DIGITS = /^\d+$/;
// eslint-disable-next-line no-control-regex -- JSON's whitespace, as body-parser matches it
const FIRST_NON_WHITESPACE = /^[\x20\x09\x0a\x0d]*([^\x20\x09\x0a\x0d]|$)/;

/**
 * Whether a request's body is all here: none declared (no Content-Length, no Transfer-Encoding), or its Content-Length's
 * worth of bytes waiting, unread, in the stream's buffer. Node sets `req.complete` only later: a body that came with
 * the headers is pushed into the buffer one microtask after the 'request' event, and the message marked complete after
 * that.
 */
export function bodyArrived(req: IncomingMessage): boolean {
  if (req.complete) return true;
  const declared = req.headers['content-length'];
  if (declared === undefined) return req.headers['transfer-encoding'] === undefined;
  return (
    !req.readableDidRead &&
    req.headers['transfer-encoding'] === undefined &&
    DIGITS.test(declared) &&
    req.readableLength === Number(declared)
  );
}

/** An error as body-parser's http-errors builds it: what respond.ts reads is `status` and `type`. */
function bodyError(status: number, type: string, message: string, Kind: ErrorConstructor = Error): Error {
  return Object.assign(new Kind(message), { status, statusCode: status, expose: true, type });
}

/** body-parser's JSON parse, strict or not, with its errors. */
function parseJson(text: string, strict: boolean): unknown {
  if (text.length === 0) return {};
  if (strict && text[0] !== '{' && text[0] !== '[') {
    const first = FIRST_NON_WHITESPACE.exec(text)?.[1];
    if (first !== '{' && first !== '[') {
      // body-parser's message for it: JSON.parse's on the text with everything from that character on made
      // invalid, then the character put back (its position, when JSON.parse gives one, is that character's).
      const index = first ? text.indexOf(first) : -1;
      const partial = index < 0 ? '' : text.slice(0, index) + '#'.repeat(text.length - index);
      let message = 'strict violation';
      try {
        JSON.parse(partial);
      } catch (e) {
        message = (e as Error).message.replace(/#+/g, (marks) => text.substring(index, index + marks.length));
      }
      throw bodyError(400, 'entity.parse.failed', message, SyntaxError);
    }
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw bodyError(400, 'entity.parse.failed', (e as Error).message, SyntaxError);
  }
}

/**
 * A JSON body parser for bodies of up to `limit` bytes: sets `req.body` (left as it is when the request has no
 * body or another media type, as body-parser does), or passes body-parser's error to `next`. `general` parses
 * what the fast path does not take: body-parser, unless a test passes its own.
 */
export function jsonBody(
  limit: number,
  strict = true,
  general = expressParser((express) => express.json({ limit, strict }) as Middleware),
): Middleware {
  return (req, res, next) => {
    const headers = req.headers;
    const declared = headers['content-length'];
    // No body (body-parser's `typeis.hasBody`): nothing to read, `req.body` left as it is, as body-parser leaves it.
    if (declared === undefined && headers['transfer-encoding'] === undefined) {
      next();
      return;
    }
    const type = headers['content-type'];
    if (
      declared === undefined ||
      !DIGITS.test(declared) ||
      Number(declared) > limit ||
      headers['transfer-encoding'] !== undefined ||
      headers['content-encoding'] !== undefined ||
      type === undefined ||
      !PLAIN_JSON.has(type.toLowerCase()) ||
      !req.readable ||
      req.readableDidRead
    ) {
      general(req, res, next);
      return;
    }
    const expected = Number(declared);
    /** The body's bytes as text, parsed onto `req.body`; body-parser's error to `next` otherwise. */
    const parse = (bytes: Buffer | undefined) => {
      let text = bytes === undefined ? '' : bytes.toString('utf8');
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      let body: unknown;
      try {
        body = parseJson(text, strict);
      } catch (e) {
        next(e);
        return;
      }
      (req as IncomingMessage & { body?: unknown }).body = body;
      next();
    };
    if (req.readableLength === expected) {
      // The whole body is in the stream's buffer (one that came with the headers nearly always is, by the time the
      // route reads it): taken at once, with no listeners to add and remove and no 'data' and 'end' to wait for. The
      // stream is left flowing, so that it ends (and is done with) as a body read through 'data' would.
      const bytes = expected === 0 ? undefined : (req.read() as Buffer);
      req.resume();
      parse(bytes);
      return;
    }
    const chunks: Buffer[] = [];
    let received = 0;
    const done = (err?: Error) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('aborted', onAborted);
      req.off('close', onClose);
      req.off('error', onError);
      if (err) {
        // Whatever is left of the body is read and dropped, so the answer can go out on this connection.
        req.resume();
        next(err);
        return;
      }
      parse(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received));
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > expected) {
        done(bodyError(400, 'request.size.invalid', 'request size did not match content length'));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () =>
      done(
        received === expected
          ? undefined
          : bodyError(400, 'request.size.invalid', 'request size did not match content length'),
      );
    const onAborted = () => done(bodyError(400, 'request.aborted', 'request aborted'));
    const onClose = () => {
      if (!req.complete) onAborted();
    };
    const onError = (err: Error) => done(bodyError(400, 'request.aborted', err.message || 'request aborted'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('aborted', onAborted);
    req.on('close', onClose);
    req.on('error', onError);
  };
}
