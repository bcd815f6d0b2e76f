/**
 * The audit log (issue 37, item 3): who changed what, when, from where. Every entry is appended to the store with a
 * SHA-256 hash over its canonical serialization and the previous entry's hash, so that changing or removing an
 * entry breaks the chain (`npm run keys -- verify-audit`). Appends are serialised by the store's single head row,
 * also across instances on PostgreSQL (runtime/store/groups/audit.ts, `appendAuditEvents`). Never a secret's value:
 * callers describe a secret as `"set"`, `"changed"` or `"removed"` (see `secretChange`).
 */
import { createHash } from 'node:crypto';
import { newSortableId } from '../ids.ts';
import type { AuditActorType, AuditEvent, AuditHead, NewAuditEvent, Store } from '../store/types.ts';
import type { Logger } from '../log.ts';

/** The hash the chain starts from (and the anchor before any pruning). */
export const GENESIS_HASH = '0'.repeat(64);

/** JSON with object keys sorted at every level: one text for one value, whichever order its keys were built in. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** An entry's hash: SHA-256 over the canonical JSON of every field but the hash itself, the previous hash included. */
export function auditHash(e: Omit<AuditEvent, 'hash'>): string {
  const body = canonicalJson({
    seq: e.seq,
    id: e.id,
    at: e.at,
    actor_type: e.actorType,
    actor_id: e.actorId,
    action: e.action,
    target_type: e.targetType,
    target_id: e.targetId,
    source_address: e.sourceAddress,
    request_id: e.requestId,
    changes: e.changes,
    prev_hash: e.prevHash,
  });
  return createHash('sha256').update(body, 'utf8').digest('hex');
}

/** How a secret changed, never its value. */
export function secretChange(before: boolean, after: boolean | undefined): 'set' | 'changed' | 'removed' | undefined {
  if (after === undefined) return undefined;
  if (!after) return before ? 'removed' : undefined;
  return before ? 'changed' : 'set';
}

/** Who acts, and the request they act through. */
export interface AuditContext {
  actorType: AuditActorType;
  actorId: string;
  sourceAddress?: string | null;
  requestId?: string | null;
}

export interface AuditEntry {
  action: string;
  targetType: string;
  targetId: string;
  changes?: Record<string, unknown>;
}

/** Entries written in one transaction at most; more waiting are written in the next. */
const MAX_BATCH = 500;

interface Waiting {
  e: NewAuditEvent;
  resolve: (written: AuditEvent) => void;
  reject: (err: unknown) => void;
}

/**
 * Writes entries in group commits: the entries recorded while a batch is being written (or in the same turn of the
 * event loop) are written together in the next, in the order they were recorded, under one lock of the chain's
 * head. Each caller still waits until its own entry is stored. With one entry per request the head row was
 * locked once per request, which capped every audited write (upserts, 32 clients) at the rate one database
 * connection can take and release that lock (issue 35).
 */
export class AuditLog {
  private queue: Waiting[] = [];
  private writing: Promise<void> | undefined;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
  ) {}

  /**
   * Appends an entry. A change that happened is recorded even if the request then fails; a failure to record is
   * logged and thrown (the caller's change is already made: the error says so rather than pass silently).
   */
  record(ctx: AuditContext, entry: AuditEntry): Promise<AuditEvent> {
    const e: NewAuditEvent = {
      id: newSortableId('aud'),
      at: Date.now(),
      actorType: ctx.actorType,
      actorId: ctx.actorId,
      action: entry.action,
      targetType: entry.targetType,
      targetId: entry.targetId,
      sourceAddress: ctx.sourceAddress ?? null,
      requestId: ctx.requestId ?? null,
      changes: entry.changes ?? {},
    };
    return new Promise<AuditEvent>((resolve, reject) => {
      this.queue.push({ e, resolve, reject });
      // The first entry of a batch waits for the end of this turn of the event loop, so that the requests
      // handled in it share the batch; a batch being written takes the rest when it ends.
      this.writing ??= new Promise<void>((r) => setImmediate(r)).then(() => this.writeAll());
    });
  }

  /** Waits until every entry recorded so far is written (or has failed): before the store is closed. */
  async drain(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private async writeAll(): Promise<void> {
    try {
      while (this.queue.length) {
        const batch = this.queue.splice(0, MAX_BATCH);
        try {
          const written = await this.store.appendAuditEvents(
            batch.map((w) => w.e),
            auditHash,
          );
          batch.forEach((w, i) => w.resolve(written[i]!));
        } catch (err) {
          for (const { e } of batch) {
            this.log.error(
              { action: e.action, target: e.targetId, err: (err as Error).message },
              'audit entry not written',
            );
          }
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      this.writing = undefined;
    }
  }
}

export interface AuditVerification {
  ok: boolean;
  /** Entries checked. */
  checked: number;
  head: AuditHead;
  /** What is wrong, one line each (the first few). */
  problems: string[];
}

/**
 * Checks the chain from the anchor to the head: numbers without a gap, each entry's hash recomputed and equal to
 * the stored one, each previous hash the entry before's, and the last entry the head. An entry altered (any field)
 * or removed (from the start, the middle or the end) fails it. Reads a page at a time.
 */
export async function verifyAudit(store: Store, pageSize = 1000): Promise<AuditVerification> {
  const head = await store.auditHead();
  const problems: string[] = [];
  let expectedSeq = head.anchorSeq + 1;
  let prev = head.anchorHash;
  let checked = 0;
  let cursor: number | undefined = head.anchorSeq;
  for (;;) {
    const page = await store.listAuditEvents({ order: 'asc', cursor, limit: pageSize });
    for (const e of page) {
      if (e.seq !== expectedSeq)
        problems.push(
          e.seq > expectedSeq + 1
            ? `entries ${expectedSeq}–${e.seq - 1} missing`
            : e.seq === expectedSeq + 1
              ? `entry ${expectedSeq} missing`
              : `entry ${e.seq} out of order (expected ${expectedSeq})`,
        );
      if (e.prevHash !== prev) problems.push(`entry ${e.seq} (${e.id}): its previous hash is not entry ${e.seq - 1}'s`);
      const { hash: _stored, ...unhashed } = e;
      if (auditHash(unhashed) !== e.hash) problems.push(`entry ${e.seq} (${e.id}): altered (its hash does not match)`);
      prev = e.hash;
      expectedSeq = e.seq + 1;
      checked++;
    }
    if (page.length < pageSize) break;
    cursor = page[page.length - 1]!.seq;
  }
  if (expectedSeq - 1 !== head.seq) problems.push(`entries ${expectedSeq}–${head.seq} missing at the end`);
  else if (prev !== head.hash) problems.push(`the last entry is not the one the head records`);
  return { ok: problems.length === 0, checked, head, problems: problems.slice(0, 20) };
}
