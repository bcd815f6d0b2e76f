/**
 * Delivers webhook events from the store: moves outbox events into one delivery per subscribed endpoint, claims
 * the deliveries that are due (safely beside other instances: see Store.claimWebhookDeliveries), signs each with
 * its endpoint's secret as the Standard Webhooks specification says (the `standardwebhooks` library) and POSTs it
 * through the upstream layer's address guard. A 2xx acknowledges it; anything else is retried with exponential
 * backoff and jitter until 24 hours after the event, then the delivery is marked failed (it can still be redelivered).
 */
import { BATCH_BUDGET_MS, nextBatchSize } from '../jobs/batch-size.ts';
import { Foreground } from '../jobs/foreground.ts';
import { Webhook } from 'standardwebhooks';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import type { Sealer } from '../crypto/sealer.ts';
import { aad } from '../crypto/aad.ts';
import type { Store, WebhookDelivery } from '../store/types.ts';
import { send } from '../upstream/http.ts';
import { webhookHostsFor } from './targets.ts';

/** A claimed delivery is not taken by another instance for this long (longer than one attempt may take). */
const LEASE_MS = 30_000;
const RETRY_WINDOW_MS = 24 * 3_600_000;
const MAX_DELAY_MS = 3_600_000;
const BATCH = 20;
/** Outbox events moved into deliveries per transaction. */
const FAN_OUT_BATCH = 200;
/** Outbox batches moved before each claim of deliveries. */
export const FAN_OUT_BATCHES_PER_PASS = 10;

/** The wait before attempt `attempts + 1`: base × 2^(attempts−1), at most an hour, ±25 % jitter. */
export function retryDelay(attempts: number, baseMs: number, random = Math.random): number {
  const exp = Math.min(baseMs * 2 ** Math.max(0, attempts - 1), MAX_DELAY_MS);
  return Math.round(exp * (0.75 + random() * 0.5));
}

export class WebhookWorker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  /** Outbox events the next fan-out batch moves: sized by time (../jobs/batch-size.ts), at most FAN_OUT_BATCH. */
  private fanOutSize = FAN_OUT_BATCH;
  /** How long a fan-out batch should take (tests set 0 or Infinity to count batches). */
  batchBudgetMs = BATCH_BUDGET_MS;
  /** The requests in flight: each fan-out batch and each claim of deliveries waits for a pause in them. */
  foreground = new Foreground();

  constructor(
    private store: Store,
    private sealer: Sealer,
    private config: Config,
    private log: Logger,
    private metrics: Metrics,
  ) {}

  start(intervalMs = 1_000): void {
    this.timer = setInterval(() => this.poke(), intervalMs);
    this.timer.unref();
    this.poke();
  }

  /** Runs a round now (or right after the one running): an event was just written. */
  poke(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.round()
      .catch((e: unknown) => this.log.error({ err: (e as Error).message }, 'webhook delivery round failed'))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.poke();
        }
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }

  private async round(): Promise<void> {
    for (;;) {
      const now = Date.now();
      // The outbox, a bounded batch per transaction with a yield between: a connection delete writes an event per
      // account, and a million events must neither wait an hour (one batch a second) nor hold the loop. At most
      // FAN_OUT_BATCHES_PER_PASS batches before deliveries are claimed: an outbox refilled as fast as it is moved
      // (triggers polling under load) must not keep every delivery waiting.
      let drained = false;
      for (let i = 0; i < FAN_OUT_BATCHES_PER_PASS && !this.stopped; i++) {
        const started = performance.now();
        const wanted = this.fanOutSize;
        const moved = await this.store.fanOutWebhookEvents(wanted, now);
        this.fanOutSize = nextBatchSize(wanted, performance.now() - started, this.batchBudgetMs, FAN_OUT_BATCH);
        if (moved < wanted) {
          drained = true;
          break;
        }
        await this.foreground.gap();
      }
      const due = await this.store.claimWebhookDeliveries(now, LEASE_MS, BATCH);
      await Promise.all(due.map((d) => this.deliver(d)));
      // Claim again while anything was claimed, even a short batch: a delivery that just succeeded lets the next
      // event of its ordering key (a trigger instance's next item) be claimed, and it is due now, not at the next
      // timer round (an instance with 100 new items would otherwise send one a second). The loop ends: a failed
      // delivery is due only later, and holds its key's next one back.
      if ((due.length === 0 && drained) || this.stopped) return;
      await this.foreground.gap();
    }
  }

  private async deliver(d: WebhookDelivery): Promise<void> {
    const endpoint = await this.store.getWebhookEndpoint(d.endpointId);
    if (!endpoint) return;
    const started = performance.now();
    let status: number | null = null;
    let error: string | null = null;
    try {
      const secret = this.sealer.open(endpoint.secretSealed, aad.webhookSecret(endpoint.id));
      const at = new Date();
      const headers = {
        'content-type': 'application/json',
        'user-agent': 'agent-connector-service-webhooks',
        'webhook-id': d.eventId,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(secret).sign(d.eventId, at, d.payload),
      };
      const res = await send(
        { method: 'POST', url: endpoint.url, headers, body: Buffer.from(d.payload) },
        {
          connectTimeoutMs: 10_000,
          responseTimeoutMs: 15_000,
          retry: { statuses: [], max_attempts: 1 },
          maxBytes: 64 * 1024,
          maxRedirects: 0,
          credentialHeaders: [],
          configuredHosts: webhookHostsFor(endpoint.url, this.config.webhookAllowedHosts),
          limitNote: 'the limit for webhook receivers’ answers (64 KB)',
        },
      );
      status = res.status;
      if (status < 200 || status >= 300) error = `the receiver answered HTTP ${status}`;
    } catch (e) {
      error = (e as Error).message.slice(0, 500);
    }
    const latency = Math.round(performance.now() - started);
    const now = Date.now();
    this.metrics.webhookDelivery(d.eventType, error ? 'failure' : 'success');
    if (!error) {
      await this.store.finishWebhookAttempt(
        d.id,
        { status: 'succeeded', nextAttemptAt: null, lastStatus: status, lastError: null, lastLatencyMs: latency },
        now,
      );
      return;
    }
    const next = now + retryDelay(d.attempts, this.config.webhookRetryBaseMs);
    const giveUp = next > d.createdAt + RETRY_WINDOW_MS;
    this.log.warn(
      { delivery: d.id, endpoint: endpoint.id, attempt: d.attempts, status, giveUp },
      'webhook delivery failed',
    );
    await this.store.finishWebhookAttempt(
      d.id,
      {
        status: giveUp ? 'failed' : 'pending',
        nextAttemptAt: giveUp ? null : next,
        lastStatus: status,
        lastError: error,
        lastLatencyMs: latency,
      },
      now,
    );
  }
}
