/**
 * The service's Prometheus metrics (`GET /metrics`), with prom-client: one registry per service instance (tests run
 * several in one process), counters and histograms updated on the paths where things happen, and the accounts by
 * status read from the store when scraped (cached briefly, so a scraper polling often costs one grouped count).
 *
 * The hot paths only add: the per-request counters keep a tally per label combination, found by a map lookup, and
 * hand the tallies to prom-client when a scrape collects them. prom-client's own `inc`, a label child's included,
 * builds the labels' key string and looks it up in a dictionary on every call (about 2 thousand instructions per
 * counter per request under callgrind; bench/RESULTS.md). The upstream latency histogram still observes through
 * prom-client, a child per label combination.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ServerResponse } from 'node:http';
import type { Store } from './store/types.ts';
import type { Http2GuardCounts } from './scalekit/h2-limits.ts';
import type { CacheSet } from './caches.ts';

type HistogramChild = ReturnType<Histogram['labels']>;

/** How long the accounts-by-status count is reused between scrapes. */
const ACCOUNT_COUNT_TTL_MS = 10_000;

export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter;
  /** By route, then by status. */
  private readonly requestTallies = new Map<string, Map<number, Tally>>();
  private readonly tools: Counter;
  /** By tool and outcome. */
  private readonly toolTallies = new Map<string, Tally>();
  private readonly upstream: Histogram;
  /** By kind, then by connector. */
  private readonly upstreamChildren = {
    tool: new Map<string, HistogramChild>(),
    proxy: new Map<string, HistogramChild>(),
  };
  private readonly refreshes: Counter;
  private readonly deliveries: Counter;
  private accountCounts: { at: number; counts: Array<{ status: string; count: number }> } | undefined;
  private countingAccounts: Promise<void> | undefined;

  constructor(store: Store, caches: CacheSet) {
    collectDefaultMetrics({ register: this.registry });
    // In a worker, the primary asks this registry for its figures and sums every worker's (see metricsText).
    if (cluster.isWorker) answerCollections(this.registry);
    this.requests = new Counter({
      name: 'acs_http_requests_total',
      help: 'HTTP requests answered, by route (the endpoint, not the raw path) and status',
      labelNames: ['route', 'status'],
      registers: [this.registry],
      collect: () =>
        publish(
          this.requests,
          [...this.requestTallies.values()].flatMap((m) => [...m.values()]),
        ),
    });
    this.tools = new Counter({
      name: 'acs_tool_executions_total',
      help: 'Tool executions by tool, connector and outcome (success, provider_error, or the service error code)',
      labelNames: ['tool', 'connector', 'outcome'],
      registers: [this.registry],
      collect: () => publish(this.tools, this.toolTallies.values()),
    });
    this.upstream = new Histogram({
      name: 'acs_upstream_request_duration_seconds',
      help: 'Time from sending a request to a provider to its response headers, by connector and kind (tool, proxy)',
      labelNames: ['connector', 'kind'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [this.registry],
    });
    this.refreshes = new Counter({
      name: 'acs_token_refreshes_total',
      help: 'OAuth token refreshes sent to providers, by connector and outcome (success, expired, failed)',
      labelNames: ['connector', 'outcome'],
      registers: [this.registry],
    });
    this.deliveries = new Counter({
      name: 'acs_webhook_deliveries_total',
      help: 'Webhook delivery attempts, by event type and outcome (success, failure)',
      labelNames: ['event', 'outcome'],
      registers: [this.registry],
    });
    this.registerCaches(caches);
    const gauge: Gauge<'status'> = new Gauge({
      name: 'acs_connected_accounts',
      help: 'Connected accounts by status (read from the store when scraped, at most every 10 s)',
      labelNames: ['status'],
      registers: [this.registry],
      // Every worker reads the same store: across workers, the value is one worker's, not their sum.
      aggregator: 'first',
      collect: async () => {
        const now = Date.now();
        if (!this.accountCounts || now - this.accountCounts.at > ACCOUNT_COUNT_TTL_MS) {
          // Read in the background once there is a figure to answer with. The store reads counters it keeps
          // (a few rows per connection, migrations 009b and 014), never the accounts themselves.
          this.countingAccounts ??= store
            .countAccountsByStatus()
            .then((counts) => void (this.accountCounts = { at: Date.now(), counts }))
            .finally(() => (this.countingAccounts = undefined));
          if (!this.accountCounts) await this.countingAccounts;
        }
        if (!this.accountCounts) return;
        gauge.reset();
        for (const { status, count } of this.accountCounts.counts) gauge.set({ status }, count);
      },
    });
  }

  /** The caches' figures, summed by name (several parts of one service may keep a cache of the same kind). */
  private registerCaches(caches: CacheSet): void {
    const figures = () => {
      const byName = new Map<string, { size: number; max: number; hits: number; misses: number; evictions: number }>();
      for (const c of caches.all()) {
        const f = byName.get(c.name) ?? { size: 0, max: 0, hits: 0, misses: 0, evictions: 0 };
        f.size += c.size;
        f.max += c.max;
        f.hits += c.hits;
        f.misses += c.misses;
        f.evictions += c.evictions;
        byName.set(c.name, f);
      }
      return byName;
    };
    const gauge = (
      name: string,
      help: string,
      pick: (f: ReturnType<typeof figures> extends Map<string, infer F> ? F : never) => number,
    ) => {
      const g: Gauge<'cache'> = new Gauge({
        name,
        help,
        labelNames: ['cache'],
        registers: [this.registry],
        collect: () => {
          g.reset();
          for (const [cache, f] of figures()) g.set({ cache }, pick(f));
        },
      });
    };
    gauge('acs_cache_entries', 'Entries in each per-process cache (docs/scale.md)', (f) => f.size);
    gauge('acs_cache_limit', 'The size limit of each per-process cache (its setting)', (f) => f.max);
    gauge('acs_cache_hits', 'Lookups each cache answered, since the process started', (f) => f.hits);
    gauge('acs_cache_misses', 'Lookups each cache could not answer, since the process started', (f) => f.misses);
    gauge('acs_cache_evictions', 'Entries each cache dropped for its size limit or time to live', (f) => f.evictions);
  }

  /** Counts an answered request; `route` is the endpoint's operation id (or `dashboard`, `unmatched`). */
  request(route: string, status: number): void {
    let byStatus = this.requestTallies.get(route);
    if (!byStatus) {
      byStatus = new Map();
      this.requestTallies.set(route, byStatus);
    }
    const tally = byStatus.get(status);
    if (tally) tally.value++;
    else byStatus.set(status, { labels: { route, status: String(status) }, value: 1 });
  }

  /** Counts requests on `res` under `route` when its answer has been sent. */
  countResponse(res: ServerResponse, route: string): void {
    (res as CountedResponse)[ROUTE] = route;
    (res as CountedResponse)[METRICS] = this;
    // 'finish' is emitted at most once: `on` spares the wrapper `once` allocates.
    res.on('finish', onFinish);
  }

  toolExecution(tool: string, connector: string, outcome: string): void {
    const key = `${tool} ${outcome}`;
    const tally = this.toolTallies.get(key);
    if (tally) tally.value++;
    else this.toolTallies.set(key, { labels: { tool, connector, outcome }, value: 1 });
  }

  upstreamLatency(connector: string, kind: 'tool' | 'proxy', seconds: number): void {
    const children = this.upstreamChildren[kind];
    let child = children.get(connector);
    if (!child) {
      child = this.upstream.labels(connector, kind);
      children.set(connector, child);
    }
    child.observe(seconds);
  }

  tokenRefresh(connector: string, outcome: 'success' | 'expired' | 'failed'): void {
    this.refreshes.labels(connector, outcome).inc();
  }

  webhookDelivery(event: string, outcome: 'success' | 'failure'): void {
    this.deliveries.labels(event, outcome).inc();
  }

  /**
   * Publishes a component's own tallies (an object of counters it increments) as one counter with a `what` label,
   * read at each scrape: the trigger poller's polls and failures, the push engine's accepted and refused notifications.
   */
  watchCounters<T extends { [K in keyof T]: number }>(name: string, help: string, counts: T): void {
    const c: Counter = new Counter({
      name,
      help,
      labelNames: ['what'],
      registers: [this.registry],
      collect: (): void =>
        publish(
          c,
          Object.entries(counts).map(([what, value]) => ({ labels: { what }, value: Number(value) })),
        ),
    });
  }

  /** Publishes what the HTTP/2 guard refused or cut (runtime/scalekit/h2-limits.ts), read at each scrape. */
  watchHttp2(counts: Http2GuardCounts): void {
    const guarded: Counter = new Counter({
      name: 'acs_http2_guard_total',
      help: 'HTTP/2 sessions and streams the limits refused or cut, by what happened',
      labelNames: ['what'],
      registers: [this.registry],
      collect: (): void =>
        publish(guarded, [
          { labels: { what: 'session_refused' }, value: counts.sessionsRefused },
          { labels: { what: 'session_idle_closed' }, value: counts.sessionsIdleClosed },
          { labels: { what: 'stream_timed_out' }, value: counts.streamsTimedOut },
          { labels: { what: 'reset_flood_stopped' }, value: counts.resetFloodsStopped },
        ]),
    });
  }
}

/** A counter's total for one label combination, kept by the service and handed to prom-client on collection. */
interface Tally {
  readonly labels: Readonly<Record<string, string>>;
  value: number;
}

/** Sets `counter` to the tallies, when prom-client collects it for a scrape. */
function publish(counter: Counter, tallies: Iterable<Tally>): void {
  counter.reset();
  for (const tally of tallies) counter.inc(tally.labels, tally.value);
}

const METRICS_REQUEST = 'acs:metrics-request';
const METRICS_ANSWER = 'acs:metrics-answer';
const COLLECT_REQUEST = 'acs:metrics-collect';
const COLLECT_ANSWER = 'acs:metrics-collected';
/** How long the primary waits for a worker's figures before the scrape fails naming it. */
const COLLECT_TIMEOUT_MS = 5_000;
let metricsRequests = 0;

type MetricsJson = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;
interface ClusterMessage {
  type?: string;
  id?: number;
  text?: string;
  error?: string;
  metrics?: MetricsJson;
}

/**
 * The metrics text to answer a scrape with: this process's, or, in a worker, every worker's summed by the primary
 * (prom-client's AggregatorRegistry.aggregate), so a scrape counts the whole service whichever worker takes it.
 */
export async function metricsText(metrics: Metrics): Promise<{ text: string; contentType: string }> {
  const contentType = metrics.registry.contentType;
  if (!cluster.isWorker || !process.send) return { text: await metrics.registry.metrics(), contentType };
  const id = ++metricsRequests;
  return new Promise((resolve, reject) => {
    const onMessage = (m: ClusterMessage) => {
      if (m?.type !== METRICS_ANSWER || m.id !== id) return;
      process.off('message', onMessage);
      if (m.error !== undefined) reject(new Error(`the primary could not collect the workers' metrics: ${m.error}`));
      else resolve({ text: m.text ?? '', contentType });
    };
    process.on('message', onMessage);
    process.send!({ type: METRICS_REQUEST, id });
  });
}

let collectedRegistry: Registry | undefined;

/** In a worker: answers the primary's collection requests with `registry`'s figures (one listener per process). */
function answerCollections(registry: Registry): void {
  const first = collectedRegistry === undefined;
  collectedRegistry = registry;
  if (!first) return;
  process.on('message', (m: ClusterMessage) => {
    if (m?.type !== COLLECT_REQUEST) return;
    collectedRegistry!.getMetricsAsJSON().then(
      (metrics) => process.send?.({ type: COLLECT_ANSWER, id: m.id, metrics }),
      (e: Error) => process.send?.({ type: COLLECT_ANSWER, id: m.id, error: e.message }),
    );
  });
}

/**
 * In the primary: answers the workers' metrics requests with every serving worker's figures summed. Only workers
 * that listen are asked: one still starting (a replacement, say) has counted nothing yet and may not answer for
 * seconds, and a scrape must not wait for it or fail because of it.
 */
export function serveClusterMetrics(): void {
  const serving = new Set<Worker>();
  cluster.on('listening', (worker) => serving.add(worker));
  let collections = 0;
  /** By collection id: takes a worker's answer, or `undefined` when the worker has exited. */
  const pending = new Map<number, (worker: Worker, m: ClusterMessage | undefined) => void>();
  cluster.on('exit', (worker) => {
    serving.delete(worker);
    // A worker that dies mid-collection took its figures with it: the scrape sums the others.
    for (const take of [...pending.values()]) take(worker, undefined);
  });

  const collect = (): Promise<string> => {
    const id = ++collections;
    const asked = [...serving].filter((w) => w.isConnected());
    if (asked.length === 0) return Promise.resolve('');
    return new Promise((resolve, reject) => {
      const answers: MetricsJson[] = [];
      const waiting = new Set(asked);
      const finish = (err?: Error) => {
        clearTimeout(timer);
        pending.delete(id);
        if (err) return reject(err);
        resolve(AggregatorRegistry.aggregate(answers).metrics());
      };
      const timer = setTimeout(() => {
        const pids = [...waiting].map((w) => w.process.pid).join(', ');
        finish(new Error(`worker ${pids} did not answer within ${COLLECT_TIMEOUT_MS} ms`));
      }, COLLECT_TIMEOUT_MS);
      pending.set(id, (worker, m) => {
        if (!waiting.delete(worker)) return;
        if (m === undefined) {
          if (waiting.size === 0) finish();
          return;
        }
        if (m.error !== undefined) return finish(new Error(`worker ${worker.process.pid}: ${m.error}`));
        answers.push(m.metrics ?? []);
        if (waiting.size === 0) finish();
      });
      for (const w of asked) w.send({ type: COLLECT_REQUEST, id });
    });
  };

  cluster.on('message', (worker, m: ClusterMessage) => {
    if (m?.type === COLLECT_ANSWER) {
      pending.get(m.id ?? -1)?.(worker, m);
      return;
    }
    if (m?.type !== METRICS_REQUEST) return;
    collect().then(
      (text) => worker.send({ type: METRICS_ANSWER, id: m.id, text }),
      (e: Error) => worker.send({ type: METRICS_ANSWER, id: m.id, error: e.message }),
    );
  });
}

const ROUTE = Symbol('metrics.route');
const METRICS = Symbol('metrics');
type CountedResponse = ServerResponse & { [ROUTE]: string; [METRICS]: Metrics };

/** One function for every response (no closure per request). */
function onFinish(this: ServerResponse): void {
  const res = this as CountedResponse;
  res[METRICS].request(res[ROUTE], res.statusCode);
}

/** Whether `authorization` carries METRICS_TOKEN (compared in constant time over digests of equal length). */
export function metricsTokenMatches(authorization: string | undefined, token: string): boolean {
  const given = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1] ?? '';
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(token)) && given.length > 0;
}
