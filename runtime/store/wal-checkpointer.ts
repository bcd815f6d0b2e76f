import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * SQLite's WAL checkpoints, run on a thread of their own.
 *
 * In WAL mode every commit appends to the -wal file; a checkpoint copies those pages back into the database file
 * and syncs both files (synchronous = NORMAL makes the checkpoint the point of durability). By default SQLite runs
 * it inside the commit that grows the WAL past 1 000 pages, on the committing thread: for the service, the event
 * loop. Under load the activity rows fill 1 000 pages every few seconds, and each checkpoint then held every request
 * in flight for about 16 ms, 13 of them waiting for the two fsyncs: the
 * proxy's p99 latency. The first write after a checkpoint that copied everything starts the WAL over, and syncs its
 * new header: one more fsync, on whichever thread writes.
 *
 * `WalCheckpointer` is a worker thread with a connection of its own that checkpoints in two steps when asked.
 * First PASSIVE, which never waits for a lock and never blocks a reader or a writer of the main connection: it
 * copies what no reader still needs, most of the work. But it finishes the job (syncs the database file, after
 * which the WAL may start over) only if nothing was committed while it copied, and under a steady stream of
 * writes (a connection's delete, a fan-out) something always was: the WAL then grew to `SAFETY_PAGES`, where the
 * main connection's own checkpoint copied the rest and synced the file on the event loop, 57-86 ms a time with
 * the thread's pages still unwritten (an strace of bench/scale.ts's delete, 1,000,000 accounts). So a FULL
 * checkpoint follows: it waits for the write lock (on the thread: SQLite's busy handler sleeps there), copies the
 * few pages committed meanwhile and syncs, while the main connection's writers wait on timers (see sqlite.ts,
 * beginImmediate) and its readers go on. Holding the write lock, FULL also waits for any reader still on an older
 * snapshot (another process's long read, a backup): it gives up after `FULL_WAIT_MS`, so that the writers never
 * wait on it for long, and the next checkpoint tries again.
 *
 * `CheckpointUpkeep` asks for a checkpoint every `checkpointPages` pages appended to the WAL (by any write: the
 * store reads the WAL index's frame count after each of its commits, and when its look for changes finds another
 * connection's), so the main thread is left with the WAL's restart, one fsync per checkpoint, where SQLite's
 * default gave it three and the copy, twice as often.
 *
 * A thread costs about 8 MB of RSS (a V8 isolate with Node's bootstrap), which a service with little traffic does
 * not need: its checkpoints are minutes apart. `CheckpointUpkeep` therefore runs the thread only while the write
 * rate makes checkpoints frequent (and for a minute after, so that bursts of traffic do not start one each), and
 * SQLite's own automatic checkpoint does the rest. While the thread runs, the main connection's automatic
 * checkpoint stays armed at a far higher mark (`SAFETY_PAGES`), so the WAL stays bounded whatever is written
 * besides the batches; if the thread fails, SQLite's default comes back and stays.
 */

/** SQLite's own automatic checkpoint mark, in WAL pages. */
export const SQLITE_DEFAULT_PAGES = 1000;
/** Where the main connection checkpoints by itself while the thread runs: 40 MB of WAL (4 KiB pages). */
export const SAFETY_PAGES = 10_000;

export interface CheckpointResult {
  /** Pages in the WAL when the checkpoint ran. */
  log: number;
  /** Of those, pages in the database file afterwards (all of them unless a reader still needed some). */
  checkpointed: number;
  /**
   * Whether another connection's checkpoint was under way, or the FULL step gave up: the write lock or an older
   * reader stayed past `FULL_WAIT_MS` (see `full`).
   */
  busy: boolean;
  /**
   * Whether the second step ran to its end: everything the WAL held was copied and the database file synced, so
   * that the next commit starts the WAL over.
   */
  full: boolean;
}

/**
 * How long the thread's FULL step waits for a lock (SQLite's busy handler, on the thread): for the main
 * connection's write transaction in progress (a group commit or a batch, 10 ms or less), then, holding the write
 * lock, for each reader on an older snapshot. Past it, the step gives up (`busy`) and the writers go on.
 */
export const FULL_WAIT_MS = 100;

// CommonJS, run with `eval`: the service runs both from its TypeScript sources and from a bundle, where a worker
// file of its own would need a place and a build step of its own. better-sqlite3 comes by the path the owner resolved.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true, timeout: workerData.fullWaitMs });
const checkpoint = () => {
  const [p] = db.pragma('wal_checkpoint(PASSIVE)');
  if (p.busy === 1) return { busy: true, log: p.log, checkpointed: p.checkpointed, full: false };
  // What the main connection committed while PASSIVE copied, with the write lock held: it is a few pages now.
  const [f] = db.pragma('wal_checkpoint(FULL)');
  return { busy: f.busy === 1, log: f.log, checkpointed: f.checkpointed, full: f.busy !== 1 };
};
parentPort.on('message', (m) => {
  if (m.type === 'now') {
    const result = checkpoint();
    if (m.id) parentPort.postMessage({ type: 'result', id: m.id, result });
  } else if (m.type === 'stop') {
    // What was written since the last request goes to the database file before the thread ends.
    checkpoint();
    db.close();
    parentPort.close();
  }
});
parentPort.postMessage({ type: 'ready' });
`;

type FromWorker = { type: 'ready' } | { type: 'result'; id: number; result: CheckpointResult };

export class WalCheckpointer {
  private readonly worker: Worker;
  private readonly ready: Promise<void>;
  private waiting = new Map<number, { resolve: (r: CheckpointResult) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private stopped = false;
  private exited: Promise<void>;
  /** Why the thread stopped on its own, once it did. */
  failure?: Error;

  constructor(path: string, onFailure: (e: Error) => void) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { path, driver, fullWaitMs: FULL_WAIT_MS },
      // The thread keeps a handful of objects: a small heap, so that it costs the service little memory.
      resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 },
      stdout: false,
      stderr: false,
    });
    // A service that is otherwise done must not be kept alive by its checkpoints.
    this.worker.unref();
    let readyResolve!: () => void;
    this.ready = new Promise((r) => (readyResolve = r));
    const fail = (e: Error) => {
      if (this.stopped || this.failure) return;
      this.failure = e;
      for (const w of this.waiting.values()) w.reject(e);
      this.waiting.clear();
      readyResolve();
      onFailure(e);
    };
    this.worker.on('message', (m: FromWorker) => {
      if (m.type === 'ready') readyResolve();
      else {
        this.waiting.get(m.id)?.resolve(m.result);
        this.waiting.delete(m.id);
      }
    });
    this.worker.on('error', fail);
    this.exited = new Promise((resolve) =>
      this.worker.once('exit', (code) => {
        fail(new Error(`the WAL checkpoint thread exited (code ${code})`));
        resolve();
      }),
    );
  }

  /** Asks the thread for a checkpoint, without waiting for it. */
  request(): void {
    if (!this.stopped && !this.failure) this.worker.postMessage({ type: 'now', id: 0 });
  }

  /** A checkpoint now, on the thread, and its result (tests and diagnostics). */
  async checkpoint(): Promise<CheckpointResult> {
    await this.ready;
    if (this.failure) throw this.failure;
    if (this.stopped) throw new Error('the WAL checkpoint thread was stopped');
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ type: 'now', id });
    });
  }

  /**
   * A last checkpoint, then the thread's connection closes and the thread ends (so that the main connection is the
   * last one to close, which removes the WAL).
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.ready;
    if (!this.failure) this.worker.postMessage({ type: 'stop' });
    await this.exited;
  }
}

export interface UpkeepOptions {
  /** Pages appended to the WAL within `windowMs` that start the thread. */
  startPages: number;
  /** The window the write rate is counted over. */
  windowMs: number;
  /**
   * Windows in a row with fewer than `startPages` after which the thread ends. Starting a thread takes tens of
   * milliseconds of CPU, competing with requests, so a pause between bursts of traffic should not end it.
   */
  quietWindows: number;
  /** WAL pages between two checkpoints. */
  checkpointPages: number;
}

/**
 * 180 pages a window are about 2 000 activity rows (about 11 fill a WAL page): from there on the main thread would checkpoint every 55 s or more often; below that, a checkpoint's pause is rare
 * enough to leave to SQLite. 1 800 pages (7 MB) between checkpoints. The pages are counted from the WAL itself, not
 * estimated from rows: an estimate from the activity rows alone left out the accounts' transactions, and while the
 * thread ran (the main connection's mark then at SAFETY_PAGES) a webhook fan-out grew the WAL to that mark with no
 * checkpoint asked, and the main thread then copied 40 MB in one commit (a 126-190 ms pause, bench/scale.ts).
 */
export const UPKEEP_DEFAULTS: UpkeepOptions = {
  startPages: 180,
  windowMs: 10_000,
  quietWindows: 6,
  checkpointPages: 1_800,
};

/** Runs the checkpoint thread while the store's batched writes come fast, and only then (see above). */
export class CheckpointUpkeep {
  private thread?: WalCheckpointer;
  private timer?: NodeJS.Timeout;
  private pages = 0;
  private windowStart = 0;
  private quiet = 0;
  private sinceCheckpoint = 0;
  /** Set once the thread failed, or the store closes: no thread starts again. */
  private done = false;
  /** Threads started so far (diagnostics and tests). */
  started = 0;

  /**
   * @param setMainMark sets the main connection's `wal_autocheckpoint`
   * @param onProblem told when the thread fails (the store goes on, with SQLite's own checkpoints)
   */
  constructor(
    private readonly path: string,
    private readonly setMainMark: (pages: number) => void,
    private readonly onProblem: (message: string, e: Error) => void,
    private readonly opts: UpkeepOptions = UPKEEP_DEFAULTS,
  ) {}

  get running(): boolean {
    return this.thread !== undefined;
  }

  /** Counts `pages` appended to the WAL; starts the thread when the rate calls for it. */
  wrote(pages: number, now = Date.now()): void {
    if (!this.thread && now - this.windowStart > this.opts.windowMs) {
      this.windowStart = now;
      this.pages = 0;
    }
    this.pages += pages;
    if (this.thread) {
      this.sinceCheckpoint += pages;
      if (this.sinceCheckpoint >= this.opts.checkpointPages) {
        this.sinceCheckpoint = 0;
        this.thread.request();
      }
    } else if (!this.done && this.pages >= this.opts.startPages) {
      const thread = this.start();
      // What started it may be a checkpoint's worth already (another process's bulk write, counted at once).
      if (pages >= this.opts.checkpointPages) thread?.request();
    }
  }

  /** Starts the thread, if it is not running, and asks it for a checkpoint of what the WAL holds now. */
  takeOver(): void {
    if (!this.done) (this.thread ?? this.start())?.request();
  }

  private start(): WalCheckpointer | undefined {
    let thread: WalCheckpointer;
    try {
      thread = this.thread = new WalCheckpointer(this.path, (e) => this.failed(e));
    } catch (e) {
      this.failed(e as Error);
      return undefined;
    }
    this.started++;
    this.setMainMark(SAFETY_PAGES);
    this.pages = 0;
    this.quiet = 0;
    this.sinceCheckpoint = 0;
    this.timer = setInterval(() => {
      this.quiet = this.pages < this.opts.startPages ? this.quiet + 1 : 0;
      this.pages = 0;
      if (this.quiet >= this.opts.quietWindows) void this.idle();
    }, this.opts.windowMs);
    this.timer.unref();
    return thread;
  }

  private failed(e: Error): void {
    this.done = true;
    clearInterval(this.timer);
    this.thread = undefined;
    this.setMainMark(SQLITE_DEFAULT_PAGES);
    this.onProblem('WAL checkpoints are back on the main thread: their thread failed', e);
  }

  /** The writes stayed slow: the thread ends (after a last checkpoint), and SQLite's default is back. */
  private async idle(): Promise<void> {
    const thread = this.thread;
    if (!thread) return;
    clearInterval(this.timer);
    this.thread = undefined;
    this.windowStart = Date.now();
    this.pages = 0;
    await thread.stop();
    // A thread started meanwhile (the writes came back) keeps the high mark.
    if (!this.thread && !this.done) this.setMainMark(SQLITE_DEFAULT_PAGES);
  }

  /** A checkpoint now on the thread, when it runs (tests and diagnostics). */
  checkpoint(): Promise<CheckpointResult> | undefined {
    return this.thread?.checkpoint();
  }

  /** Ends the thread for good; the store's connection closes after it. */
  async close(): Promise<void> {
    this.done = true;
    clearInterval(this.timer);
    const thread = this.thread;
    this.thread = undefined;
    await thread?.stop();
  }
}
