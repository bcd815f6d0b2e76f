/**
 * WORKERS=<n|auto>: n worker processes on one port (node:cluster; the primary accepts connections and hands them
 * out). The primary prepares the store once (migrations, keys, the first credential and admin password, printed
 * by the caller) so that workers never race to create them, then forks the workers, replaces a worker that dies,
 * and on SIGTERM or SIGINT passes the signal on and exits once every worker has drained.
 */
import cluster, { type Worker } from 'node:cluster';
import net, { type AddressInfo } from 'node:net';
import type { Config } from './config.ts';
import type { Logger } from './log.ts';
import { serveClusterMetrics } from './metrics.ts';

export function runPrimary(config: Config, log: Logger): void {
  let stopping = false;
  let listened = false;
  const fork = (): Worker => cluster.fork();
  cluster.on('listening', () => (listened = true));
  cluster.on('exit', (worker, code, signal) => {
    if (!listened && !stopping) {
      // A worker that fails before it ever served would fail again: stop instead of restarting it forever.
      log.error({ worker: worker.process.pid, code, signal }, 'a worker failed to start; stopping');
      stopping = true;
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
      process.exitCode = 1;
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(1);
      return;
    }
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) {
        log.info('all workers stopped');
        process.exit(process.exitCode ?? 0);
      }
      return;
    }
    log.error({ worker: worker.process.pid, code, signal }, 'worker exited; starting another');
    fork();
  });
  serveClusterMetrics();
  for (let i = 0; i < config.workers; i++) fork();
  log.info({ workers: config.workers }, 'started worker processes');
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      if (stopping) return;
      stopping = true;
      log.info({ signal: sig }, 'passing the signal to every worker; each drains, then exits');
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    });
  }
}

/** A port free on `host` now, picked by the system (for PORT=0 with several workers). */
export function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
