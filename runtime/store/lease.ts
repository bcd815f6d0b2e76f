import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/** Names this process in lease rows: host, pid, and a nonce per process start (a restarted service may get the same pid). */
const HOST = hostname();
const INCARNATION = randomBytes(4).toString('hex');

/** A new lease owner name for this process: `host:pid:incarnation:nonce`. */
export function leaseOwner(): string {
  return `${HOST}:${process.pid}:${INCARNATION}:${randomBytes(8).toString('hex')}`;
}

/**
 * Whether a lease owner (`host:pid:incarnation:nonce`) is a process of this host that no longer runs. A lease of
 * a killed process of this host can then be taken over at once instead of waiting for it to expire. Anything
 * uncertain (another host name, a live or foreign pid) is not gone.
 */
export function leaseOwnerGone(owner: string | null): boolean {
  const m = /^(.+):(\d+):([0-9a-f]+):[0-9a-f]+$/.exec(owner ?? '');
  if (!m || m[1] !== HOST) return false;
  const pid = Number(m[2]);
  if (pid === process.pid) return m[3] !== INCARNATION;
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
