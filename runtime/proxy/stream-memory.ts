/**
 * Keeps the memory of streamed bodies bounded. Every socket read of a proxied body is a fresh buffer of up to
 * 64 KiB (Node allocates one per read), garbage as soon as it has been written on. Those buffers live outside V8's
 * heap, and V8 collects them only when it collects their small JavaScript wrappers: the young generation hardly
 * grows while bytes flow, so that happens only when V8's external-memory heuristic fires, after some 64 MB of
 * them. A 200 MB transfer then grew the process by 20 to 53 MB from run to run (`--trace-gc`: every collection
 * during a transfer was "external memory pressure"; none was the young generation filling up).
 *
 * While a proxied request is under way, this checks every `intervalMs` how much ArrayBuffer memory has appeared
 * since the last collection and, past `limitBytes`, asks V8 for a young-generation collection (a scavenge: the
 * wrappers of finished chunks are young, so it frees their buffers; a millisecond or two). The growth then stays
 * near `limitBytes` plus what one interval brings.
 *
 * 4 MB checked every 5 ms rather than 8 MB every 10: once the service has been under load, V8's old-generation
 * limit sits close to its live size, and with 8 MB of buffers allowed to pile up (16 MB at 800 MB/s between two
 * checks) V8 ran 4-7 mark-compacts during a single 200 MB transfer, each freeing nothing, at 1.1-1.7x the bare
 * pass-through's CPU per MB. With 4 MB every 5 ms: no mark-compact over four transfers after the same load, in two
 * runs of four transfers, at 0.6-1.4x. That is about 10 scavenges per
 * 100 MB (81-85 over the four transfers), each a fraction of a millisecond with the young generation nearly empty.
 * In the bench's two runs since, transfers took 0.8-1.9x the pass-through's CPU per MB, uploads the most.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

type Collect = (options: { type: 'minor' }) => void;

let collect: Collect | null | undefined;

/** V8's collector, as `--expose-gc` gives it, or null where it cannot be had. */
function collector(): Collect | null {
  if (collect !== undefined) return collect;
  const exposed = (globalThis as { gc?: Collect }).gc;
  if (exposed) return (collect = exposed);
  try {
    // The flag applies to contexts created after it: a fresh one hands out its gc, and the flag goes back off.
    v8.setFlagsFromString('--expose-gc');
    collect = vm.runInNewContext('gc') as Collect;
    v8.setFlagsFromString('--no-expose-gc');
  } catch {
    collect = null;
  }
  return collect;
}

export class StreamMemory {
  private active = 0;
  private timer: NodeJS.Timeout | undefined;
  /** ArrayBuffer bytes after the last collection (undefined: to be read at the next check). */
  private floor: number | undefined;
  /** Collections run, for tests and diagnostics. */
  collections = 0;

  constructor(
    private readonly limitBytes = 4 * 1024 * 1024,
    private readonly intervalMs = 5,
  ) {}

  /** A streamed request begins; call `end()` when it is over. */
  begin(): void {
    this.active++;
    if (this.timer || !collector()) return;
    this.floor = process.memoryUsage().arrayBuffers;
    this.timer = setInterval(() => this.check(), this.intervalMs);
    this.timer.unref();
  }

  end(): void {
    this.active--;
  }

  private check(): void {
    if (this.active <= 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    const now = process.memoryUsage().arrayBuffers;
    // After a collection the buffers are freed by a concurrent sweeper: the floor is read one interval later.
    if (this.floor === undefined || now < this.floor) {
      this.floor = now;
      return;
    }
    if (now - this.floor < this.limitBytes) return;
    collector()!({ type: 'minor' });
    this.collections++;
    this.floor = undefined;
  }
}
