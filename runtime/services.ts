import type { DestinationStream } from 'pino';
import type { Config } from './config.ts';
import { createLogger, type Logger } from './log.ts';
import { openStore } from './store/index.ts';
import type { Store } from './store/types.ts';
import { Sealer } from './crypto/sealer.ts';
import { loadKeyring } from './crypto/keys.ts';
import { createApiCredential, ServiceTokens, type NewCredential } from './auth/service-auth.ts';
import { AccountService } from './accounts/service.ts';
import { ActivityRecorder } from './activity.ts';
import { ToolExecutor } from './tools/executor.ts';
import { ProxyHandler } from './proxy/proxy.ts';
import { Upstream } from './upstream/upstream.ts';
import { OAuthFlow } from './oauth/flow.ts';
import { JustInTime } from './connect/just-in-time.ts';
import { DashboardAuth } from './dashboard/auth.ts';
import { Metrics } from './metrics.ts';
import { WebhookWorker } from './webhooks/worker.ts';
import { WebhookService } from './webhooks/service.ts';
import { CacheSet, setProcessCacheLimits } from './caches.ts';
import { ConnectionDeletions } from './jobs/connection-deletions.ts';
import { sweepExpired } from './jobs/sweeps.ts';
import { Foreground, GIVE_WAY_MAX_MS } from './jobs/foreground.ts';
import { BATCH_BUDGET_MS } from './jobs/batch-size.ts';
import { TriggerService } from './triggers/service.ts';
import { TriggerPoller } from './triggers/poller.ts';
import { PushEngine } from './triggers/push.ts';
import { AuditLog } from './audit/log.ts';

export interface Services {
  config: Config;
  log: Logger;
  store: Store;
  sealer: Sealer;
  tokens: ServiceTokens;
  accounts: AccountService;
  upstream: Upstream;
  activity: ActivityRecorder;
  executor: ToolExecutor;
  proxy: ProxyHandler;
  oauth: OAuthFlow;
  /** The `authorization_required` answers and their links (runtime/connect/just-in-time.ts). */
  justInTime: JustInTime;
  dashboard: DashboardAuth;
  metrics: Metrics;
  webhooks: WebhookService;
  /** The audit log: every change, sign-in and completed authorization, hash-chained (runtime/audit/log.ts). */
  audit: AuditLog;
  /** Every bounded cache of this instance (and the process-wide ones), as /metrics reports them. */
  caches: CacheSet;
  /** Connection deletes, run in the background (runtime/jobs/connection-deletions.ts). */
  deletions: ConnectionDeletions;
  /** The requests in flight, which the background work's batches give way to (runtime/jobs/foreground.ts). */
  foreground: Foreground;
  /** Trigger instances (docs/triggers.md) and the engine that polls them. */
  triggers: TriggerService;
  /** Push triggers: registrations with providers and the ingress route (runtime/triggers/push.ts). */
  push: PushEngine;
  poller: TriggerPoller;
  /** Set on the first start with an empty store: the credential to print once. */
  firstCredential?: NewCredential;
  /**
   * Settles once the dashboard's admin account is in place (after the start: see DashboardAuth.adminReady), with
   * the generated password when this start created the account without ADMIN_PASSWORD: print it once.
   */
  firstAdminPassword: Promise<string | undefined>;
  keyCreated: boolean;
  /** Set when the process begins to stop: /ready answers 503 and responses close their connections. */
  lifecycle: { draining: boolean };
  close(): Promise<void>;
}

export interface ServiceOptions {
  logDestination?: DestinationStream;
  store?: Store;
}

export async function createServices(config: Config, opts: ServiceOptions = {}): Promise<Services> {
  const log = createLogger(config.logLevel, opts.logDestination);
  setProcessCacheLimits({ hosts: config.caches.hosts, connections: config.caches.connections });
  const caches = new CacheSet();
  const store = opts.store ?? openStore(config);
  await store.migrate();
  // Caches of connections, accounts and credential states follow the store's changes, this process's and others'.
  await store.watchChanges();
  store.startUpkeep((message, e) => log.error({ err: e.message }, message));
  const {
    keyring,
    created: keyCreated,
    source,
  } = loadKeyring({
    dataDir: config.dataDir,
    encryptionKeys: config.encryptionKeys,
    mayCreate: await store.isEmpty(),
  });
  const sealer = new Sealer(keyring);
  log.info({ store: store.kind, keySource: source, activeKey: keyring.activeKid }, 'store and keys ready');

  const tokens = new ServiceTokens(store, sealer, config.publicUrl, config.tokenTtlSeconds, undefined, {
    caches,
    max: config.caches.tokens,
  });
  await tokens.init();

  let firstCredential: NewCredential | undefined;
  if ((await store.countApiCredentials()) === 0) {
    try {
      firstCredential = await createApiCredential(store, 'First credential', {
        clientId: config.initialClientId,
        clientSecret: config.initialClientSecret,
      });
    } catch (e) {
      // Another process sharing the store created it first.
      if ((await store.countApiCredentials()) === 0) throw e;
    }
  }

  const dashboard = await DashboardAuth.init(store, sealer, config);
  const firstAdminPassword = dashboard.adminReady;
  firstAdminPassword.catch((e: unknown) => log.error({ err: e }, 'the dashboard admin account could not be set up'));

  const metrics = new Metrics(store, caches);
  const activity = new ActivityRecorder(store, log);
  const accounts = new AccountService(store, sealer, config, log, caches);
  accounts.metrics = metrics;
  const upstream = new Upstream(accounts, config, log, metrics, caches);
  const executor = new ToolExecutor(accounts, upstream, activity, metrics, {
    answerBudgetTokens: config.toolAnswerBudgetTokens,
  });
  const proxy = new ProxyHandler(accounts, upstream, activity, log);
  const oauth = new OAuthFlow(store, sealer, accounts, config, log);
  const justInTime = new JustInTime(oauth);
  executor.justInTime = justInTime;
  proxy.justInTime = justInTime;

  // Batches hold the event loop only on SQLite: there they give way to requests (runtime/jobs/foreground.ts) and are
  // sized by time (runtime/jobs/batch-size.ts). On PostgreSQL a batch mostly waits for the database, its time is
  // mostly round trips and the commit, and sized by time it shrank to 10 accounts under load (a connection delete
  // of 1,000,000 went at 500 accounts a second): there batches keep their configured size.
  const holdsLoop = store.kind === 'sqlite';
  const foreground = new Foreground(holdsLoop ? GIVE_WAY_MAX_MS : 0);
  const batchBudgetMs = holdsLoop ? BATCH_BUDGET_MS : Infinity;
  const webhooks = new WebhookService(store, sealer, config, new WebhookWorker(store, sealer, config, log, metrics));
  webhooks.worker.foreground = foreground;
  webhooks.worker.batchBudgetMs = batchBudgetMs;
  webhooks.worker.start();
  const deletions = new ConnectionDeletions({
    store,
    log,
    batchSize: config.batchSize,
    onEvents: () => webhooks.worker.poke(),
    foreground,
    batchBudgetMs,
  });
  deletions.start();

  const triggers = new TriggerService(store, accounts, executor, config);
  const poller = new TriggerPoller(store, accounts, executor, config, log, () => webhooks.worker.poke());
  triggers.onDue = () => poller.poke();
  const push = new PushEngine(store, accounts, executor, sealer, config, log, () => webhooks.worker.poke());
  push.onDue = () => poller.poke();
  triggers.push = push;
  poller.push = push;
  if (config.triggers.poller) poller.start();
  metrics.watchCounters(
    'acs_token_refresh_pacing_total',
    'Token refreshes that waited their turn on a connection whose token endpoint refuses or fails most of them, and those refused because too many waited',
    accounts.pacer.counters,
  );
  metrics.watchCounters('acs_trigger_polls_total', 'Trigger polls in this process, by outcome', poller.counters);
  metrics.watchCounters(
    'acs_background_give_way_total',
    'Batches of background work that waited for a pause in the requests (waits), and those that waited the most it may (timedOut)',
    foreground.stats,
  );
  metrics.watchCounters(
    'acs_trigger_push_total',
    'Push trigger notifications and registrations in this process, by what happened',
    push.counters,
  );

  const touchTimer = setInterval(() => void accounts.flushTouches().catch(() => {}), 5_000);
  touchTimer.unref();
  const audit = new AuditLog(store, log);
  const sweepTimer = setInterval(() => {
    void sweepExpired(store, config.batchSize, Date.now(), foreground).catch((e: unknown) =>
      log.error({ err: (e as Error).message }, 'the sweep of expired rows failed'),
    );
    void pruneAudit(store, config.auditRetentionDays, config.batchSize, Date.now(), foreground).catch((e: unknown) =>
      log.error({ err: (e as Error).message }, 'the audit log retention sweep failed'),
    );
  }, 3_600_000);
  sweepTimer.unref();
  // A never-connected account left PENDING_VERIFICATION by a verification that expired waits for a connection again.
  const verificationTimer = setInterval(
    () => void oauth.settleExpiredVerifications(Date.now()).catch(() => {}),
    60_000,
  );
  verificationTimer.unref();

  return {
    config,
    log,
    store,
    sealer,
    tokens,
    accounts,
    upstream,
    activity,
    executor,
    proxy,
    oauth,
    justInTime,
    dashboard,
    metrics,
    webhooks,
    audit,
    caches,
    deletions,
    foreground,
    triggers,
    push,
    poller,
    firstCredential,
    firstAdminPassword,
    keyCreated,
    lifecycle: { draining: false },
    async close() {
      clearInterval(touchTimer);
      clearInterval(sweepTimer);
      clearInterval(verificationTimer);
      await deletions.stop();
      await poller.stop();
      await push.idle();
      await webhooks.worker.stop();
      await activity.flush();
      await accounts.flushTouches().catch(() => {});
      // Not cut off mid-write: the admin account is written once its password is hashed.
      await firstAdminPassword.catch(() => {});
      await audit.drain();
      await store.close();
    },
  };
}

/**
 * Removes the audit entries older than AUDIT_RETENTION_DAYS, a batch per transaction (each moving the chain's anchor
 * to the last entry removed, so the rest still verifies); nothing when it is 0.
 */
export async function pruneAudit(
  store: Store,
  days: number,
  batch: number,
  now = Date.now(),
  foreground = new Foreground(),
): Promise<number> {
  if (days <= 0) return 0;
  let removed = 0;
  for (;;) {
    const n = await store.pruneAuditEvents(now - days * 86_400_000, batch);
    removed += n;
    if (n === 0) return removed;
    await foreground.gap();
  }
}
