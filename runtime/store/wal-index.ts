import { closeSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';

/**
 * The header of SQLite's WAL index (the `<database>-shm` file), read with one `pread` to tell cheaply whether any
 * connection may have committed since the last look.
 *
 * The file starts with two copies of a 48-byte header that every commit rewrites, from any connection of any
 * process: its change counter (`iChange`), the last valid frame (`mxFrame`) and that frame's checksum move with each
 * commit, and a WAL reset gives it new salts (sqlite.org/walformat.html, "The WAL-Index Header"; the writer updates
 * the second copy, then the first). SQLite itself compares this header with its last copy when a read transaction
 * starts, and that comparison is what moves `PRAGMA data_version`. But running that pragma starts a read
 * transaction, which takes and releases a read lock with two `fcntl` calls: about 4 µs a request on a 2-core
 * virtual machine, where a look at the header takes about 2.5.
 *
 * So the store reads both copies first, and runs the pragma only when they differ from what it last settled on: an
 * unchanged header means nothing was committed since, by anyone. A header caught mid-update differs too. The
 * answer is only ever "maybe changed" or "unchanged"; `PRAGMA data_version` still decides what changed, and it
 * leaves out the store's own commits (which change the header as well, and so cost one pragma each).
 */
export const WAL_INDEX_HEADER_BYTES = 96;
const MX_FRAME_OFFSET = 16;
const LITTLE_ENDIAN = endianness() === 'LE';

export class WalIndexHeader {
  private fd: number | undefined;
  /** False once the file could not be opened: every look then answers "maybe changed". */
  private usable = true;
  private readonly settled = Buffer.alloc(WAL_INDEX_HEADER_BYTES);
  private readonly current = Buffer.alloc(WAL_INDEX_HEADER_BYTES);
  /** Whether `current` holds a whole header from the last look, and `settled` one accepted by `settle`. */
  private currentWhole = false;
  private settledWhole = false;
  private readonly frameBytes = Buffer.alloc(4);

  /** @param path the WAL index, `<database>-shm` */
  constructor(private readonly path: string) {}

  /**
   * Reads the header: false when it is the one last settled on (nothing was committed since), true when it
   * differs, is not there yet, or cannot be read.
   */
  maybeChanged(): boolean {
    this.currentWhole = false;
    if (!this.usable) return true;
    try {
      this.fd ??= openSync(this.path, 'r');
      this.currentWhole = readSync(this.fd, this.current, 0, WAL_INDEX_HEADER_BYTES, 0) === WAL_INDEX_HEADER_BYTES;
    } catch {
      // No such file (a store that does not use shared memory) or no read permission: give up the shortcut for
      // good rather than fail again on every request.
      this.close();
      this.usable = false;
      return true;
    }
    return !this.currentWhole || !this.settledWhole || !this.current.equals(this.settled);
  }

  /**
   * Accepts the header read by the last `maybeChanged()` as seen. Call it after `PRAGMA data_version` has run, so
   * that every commit before that read has reached the pragma, and any later one changes the header again.
   */
  settle(): void {
    if (!this.currentWhole) return;
    this.current.copy(this.settled);
    this.settledWhole = true;
  }

  /**
   * The WAL's frame count (`mxFrame`, at byte 16 of the header, in the machine's byte order): how many pages the
   * WAL holds, back to a few after a checkpoint let it start over. Undefined when the header cannot be read.
   */
  frames(): number | undefined {
    if (!this.usable) return undefined;
    try {
      this.fd ??= openSync(this.path, 'r');
      if (readSync(this.fd, this.frameBytes, 0, 4, MX_FRAME_OFFSET) !== 4) return undefined;
    } catch {
      return undefined;
    }
    return LITTLE_ENDIAN ? this.frameBytes.readUInt32LE(0) : this.frameBytes.readUInt32BE(0);
  }

  /** The frame count in the header the last `maybeChanged()` read (no read of its own), when it read a whole one. */
  lastFrames(): number | undefined {
    if (!this.currentWhole) return undefined;
    return LITTLE_ENDIAN ? this.current.readUInt32LE(MX_FRAME_OFFSET) : this.current.readUInt32BE(MX_FRAME_OFFSET);
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
