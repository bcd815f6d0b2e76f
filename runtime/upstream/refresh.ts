import type { LiveAccount } from '../accounts/service.ts';

/** Who can get an account fresh credentials after the provider refused them (AccountService). */
export interface Refresher {
  /** Whether the account's credentials can be refreshed at all (OAuth tokens; not API keys). */
  canRefresh(live: LiveAccount): boolean;
  /** The account with a refreshed access token (single-flight per account, across processes). */
  refreshAfterUnauthorized(live: LiveAccount): Promise<LiveAccount>;
}

/**
 * Refresh once after a 401, for every kind of upstream call (buffered tool requests, MCP calls, the proxy): runs
 * `attempt` with the account's credentials; when `unauthorized` says the provider refused them and the account's
 * token can be refreshed, `discard`s that outcome (a streamed answer must be drained), refreshes, and runs `attempt`
 * once more with the new token — whatever that second answer is, it is the answer: a provider that refuses a fresh
 * token too has refused the account, and asking again would only hammer it.
 */
export async function refreshOnceAfter401<T>(
  live: LiveAccount,
  refresher: Refresher,
  attempt: (live: LiveAccount) => Promise<T>,
  unauthorized: (outcome: T) => boolean,
  discard?: (outcome: T) => void,
): Promise<T> {
  const first = await attempt(live);
  if (!unauthorized(first) || !refresher.canRefresh(live)) return first;
  discard?.(first);
  return attempt(await refresher.refreshAfterUnauthorized(live));
}
