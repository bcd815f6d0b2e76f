/**
 * The hourly sweep of expired rows (OAuth states and links, verification requests, old activity, MCP OAuth grants): in batches of
 * `batchSize` rows, each its own short statement, waiting between them for a pause in the requests in flight (./foreground.ts), so that a backlog of a
 * million rows never stops serving (on SQLite a statement runs on the event loop from start to end).
 */
import { Foreground } from './foreground.ts';
import type { Store } from '../store/types.ts';

/** Activity records are kept this long. */
export const ACTIVITY_RETENTION_MS = 30 * 86_400_000;

export async function sweepExpired(
  store: Store,
  batchSize: number,
  now = Date.now(),
  foreground = new Foreground(),
): Promise<number> {
  const pause = () => foreground.gap();
  let deleted = 0;
  for (let n = -1; n !== 0; await pause()) deleted += n = await store.deleteExpiredOAuth(now, batchSize);
  for (let n = -1; n !== 0; await pause())
    deleted += n = await store.pruneActivity(now - ACTIVITY_RETENTION_MS, batchSize);
  // The MCP authorization server's sessions, codes and tokens, a day after they expire (a refresh token presented
  // again within that day is still recognised as reused, and revokes its grant).
  for (let n = -1; n !== 0; await pause())
    deleted += n = await store.deleteExpiredMcpOAuthGrants(now - 86_400_000, batchSize);
  return deleted;
}
