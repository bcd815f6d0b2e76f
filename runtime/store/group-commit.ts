import { CompiledQuery } from 'kysely';
import type { Db } from './backend.ts';

/**
 * Group commit for a database with one connection (SQLite): the transactions asked for in one turn of the event
 * loop run one after the other inside a single database transaction, each in a savepoint of its own, and one
 * COMMIT ends them all.
 *
 * SQLite runs one transaction at a time anyway, so running them back to back changes no outcome; what it saves is
 * the commit of each. A commit appends every page the transaction changed to the WAL: a new account changes a page of
 * the table and of each of its eight indexes, the account counts and the outbox, and the next new account, a
 * millisecond later, changes most of the same pages again. Under 32 clients writing accounts, the commit was a
 * quarter of the service's time (issue 35, upserts per second); in a group the pages are written once per group.
 *
 * Each transaction keeps its own outcome: one that throws is rolled back to its savepoint and its caller gets the
 * error, the others go on. Every caller hears of its outcome only once the group's COMMIT is done, so a caller
 * that is told "committed" is as durable as before. If the COMMIT itself fails, every transaction of the group
 * fails with its error.
 *
 * A group is bounded: it takes transactions while fewer than `maxMembers` ran and less than `budgetMs` went by,
 * since its transactions run back to back without giving the event loop a turn; what is left starts the next group
 * at the next turn.
 */
export interface GroupCommitOptions {
  maxMembers: number;
  budgetMs: number;
}

export const GROUP_COMMIT_DEFAULTS: GroupCommitOptions = { maxMembers: 64, budgetMs: 5 };

interface Member {
  fn: (tx: Db) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

const SAVEPOINT = CompiledQuery.raw('SAVEPOINT acs_member');
const RELEASE = CompiledQuery.raw('RELEASE acs_member');
const ROLLBACK_TO = CompiledQuery.raw('ROLLBACK TO acs_member');

/** What `GroupCommit` counts (tests and /metrics). */
export interface GroupCommitStats {
  /** Database transactions committed or rolled back, each holding one or more of the callers' transactions. */
  groups: number;
  /** The callers' transactions run in them. */
  members: number;
}

/** Thrown inside the group's transaction to roll it back when its only (first) member failed. */
class FirstMemberFailed extends Error {
  constructor(readonly error: unknown) {
    super('the first transaction of a group failed');
  }
}

export class GroupCommit {
  private readonly queue: Member[] = [];
  private scheduled = false;
  readonly stats: GroupCommitStats = { groups: 0, members: 0 };

  /**
   * @param committed called after each group's transaction ended (committed or not), before its callers hear
   */
  constructor(
    private readonly db: Db,
    private readonly opts: GroupCommitOptions = GROUP_COMMIT_DEFAULTS,
    private readonly committed: () => void = () => {},
  ) {}

  /** Runs `fn` in a transaction of the next group; settles once the group has committed (or failed). */
  run<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || !this.queue.length) return;
    this.scheduled = true;
    setImmediate(() => void this.runGroup());
  }

  private async runGroup(): Promise<void> {
    const outcomes: Array<() => void> = [];
    const taken: Member[] = [];
    try {
      await this.db.transaction().execute(async (tx) => {
        const started = performance.now();
        while (
          this.queue.length &&
          taken.length < this.opts.maxMembers &&
          (!taken.length || performance.now() - started < this.opts.budgetMs)
        ) {
          const m = this.queue.shift()!;
          taken.push(m);
          if (taken.length === 1) {
            // The first member needs no savepoint: if it fails, the whole transaction holds nothing else.
            try {
              const value = await m.fn(tx);
              outcomes.push(() => m.resolve(value));
            } catch (e) {
              throw new FirstMemberFailed(e);
            }
            continue;
          }
          await tx.executeQuery(SAVEPOINT);
          let value: unknown;
          try {
            value = await m.fn(tx);
          } catch (e) {
            await tx.executeQuery(ROLLBACK_TO);
            await tx.executeQuery(RELEASE);
            outcomes.push(() => m.reject(e));
            continue;
          }
          await tx.executeQuery(RELEASE);
          outcomes.push(() => m.resolve(value));
        }
      });
      for (const settle of outcomes) settle();
    } catch (e) {
      if (e instanceof FirstMemberFailed) taken[0]!.reject(e.error);
      // Anything else (a savepoint that could not be rolled back, the COMMIT): nothing of the group was kept.
      else if (taken.length) for (const m of taken) m.reject(e);
      // The transaction could not begin (another process held the write lock past busy_timeout): every waiting
      // transaction fails as it would have on its own, rather than trying again at every turn.
      else for (const m of this.queue.splice(0)) m.reject(e);
    } finally {
      this.committed();
      this.stats.groups++;
      this.stats.members += taken.length;
      this.scheduled = false;
      this.schedule();
    }
  }
}
