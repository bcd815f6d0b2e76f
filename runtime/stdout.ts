/**
 * The service's standard output: the log (pino's destination) and the lines printed for a person at a terminal,
 * in the order they were written.
 *
 * Why not pino's default destination: once stdout's reader has gone (a closed pipe, a log shipper that died), a
 * line still queued when the process exits makes its exit handler retry the write forever, so SIGTERM never ends
 * the process (test/e2e/sigterm-without-stdout.test.ts). Here a write that fails for any reason but a full pipe
 * marks stdout gone: later lines are dropped, and exit never waits on it.
 *
 * Lines are written synchronously while the pipe takes them; when it is full (EAGAIN), they wait in a bounded
 * backlog, written as the pipe drains. A backlog past its bound drops lines, and says how many once it can.
 */
import { writeSync } from 'node:fs';

/** What waits for a full pipe, at most; beyond it lines are dropped (and counted). */
const BACKLOG_MAX_BYTES = 8 * 1024 * 1024;
/** How long a full pipe is left before the next try. */
const RETRY_MS = 10;
const EMPTY = Buffer.alloc(0);
/** At exit, how many tries a still-full pipe gets (RETRY_MS apart) before the rest is given up. */
const EXIT_TRIES = 100;

export class StdoutWriter {
  private backlog: Buffer[] = [];
  private backlogBytes = 0;
  private dropped = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Set once a write failed otherwise than with a full pipe: the reader is gone. */
  gone = false;

  constructor(private readonly fd = 1) {
    process.once('exit', () => this.flushAtExit());
  }

  write(text: string): boolean {
    if (this.gone) return true;
    const buf = Buffer.from(text);
    if (this.backlog.length > 0) {
      this.queue(buf);
      return true;
    }
    const rest = this.writeNow(buf);
    if (rest.length > 0) this.queue(rest);
    return true;
  }

  /** Writes what it can now; returns what a full pipe did not take (empty when all went, or when stdout is gone). */
  private writeNow(buf: Buffer): Buffer {
    while (buf.length > 0) {
      let n: number;
      try {
        n = writeSync(this.fd, buf);
      } catch (e) {
        if ((e as { code?: string }).code === 'EAGAIN') return buf;
        this.goneNow();
        return EMPTY;
      }
      buf = buf.subarray(n);
    }
    return EMPTY;
  }

  private queue(buf: Buffer): void {
    if (this.backlogBytes + buf.length > BACKLOG_MAX_BYTES) {
      this.dropped++;
    } else {
      this.backlog.push(buf);
      this.backlogBytes += buf.length;
    }
    this.timer ??= setTimeout(() => this.drain(), RETRY_MS).unref();
  }

  /** Writes the backlog while the pipe takes it; returns whether it is empty. */
  private drain(): boolean {
    this.timer = undefined;
    if (this.dropped > 0 && !this.gone) {
      this.backlog.push(
        Buffer.from(`{"level":"warn","time":${Date.now()},"msg":"stdout was full: ${this.dropped} line(s) dropped"}\n`),
      );
      this.dropped = 0;
    }
    while (this.backlog.length > 0 && !this.gone) {
      const buf = this.backlog[0]!;
      const rest = this.writeNow(buf);
      if (this.gone) return true;
      this.backlogBytes -= buf.length - rest.length;
      if (rest.length > 0) {
        this.backlog[0] = rest;
        this.timer = setTimeout(() => this.drain(), RETRY_MS).unref();
        return false;
      }
      this.backlog.shift();
    }
    return true;
  }

  private goneNow(): void {
    this.gone = true;
    this.backlog = [];
    this.backlogBytes = 0;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** At exit: the backlog gets a bounded number of tries, never more. */
  private flushAtExit(): void {
    clearTimeout(this.timer);
    const pause = new Int32Array(new SharedArrayBuffer(4));
    for (let tries = 0; tries < EXIT_TRIES && !this.drain(); tries++) {
      clearTimeout(this.timer);
      Atomics.wait(pause, 0, 0, RETRY_MS);
    }
    clearTimeout(this.timer);
  }
}

let stdout: StdoutWriter | undefined;

/** The process's one writer of fd 1. */
export function processStdout(): StdoutWriter {
  stdout ??= new StdoutWriter(1);
  return stdout;
}
