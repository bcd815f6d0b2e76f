/**
 * A tap in front of the fake OAuth server's token endpoint, for the token-lifecycle and crash tests. It forwards
 * every request unchanged and records every token pair issued together (the access and refresh token of one
 * response). A test can act just before a refresh reaches the provider (`beforeRefresh`: e.g. a refresh that
 * happens outside the service's lock), or hold refreshes so that the service is caught mid-refresh (`hold`), then
 * drop them unanswered (the provider never saw them).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface IssuedPair {
  access_token: string;
  refresh_token?: string;
}

export class TokenTap {
  readonly pairs: IssuedPair[] = [];
  /** Refresh requests forwarded to the provider. */
  refreshes = 0;
  beforeRefresh?: (refreshToken: string) => Promise<void>;
  /** While set, refresh requests wait here (unforwarded) until `dropHeld()`. */
  hold = false;
  private held: ServerResponse[] = [];
  private heldWaiters: Array<() => void> = [];
  private server!: Server;
  private url_ = '';

  constructor(private readonly target: string) {}

  get url(): string {
    return this.url_;
  }

  /** Whether `access` and `refresh` were issued in one token response. */
  issuedTogether(access: string | undefined, refresh: string | undefined): boolean {
    return this.pairs.some((p) => p.access_token === access && p.refresh_token === refresh);
  }

  /** Resolves once a refresh request is being held. */
  waitForHeld(): Promise<void> {
    if (this.held.length) return Promise.resolve();
    return new Promise((resolve) => this.heldWaiters.push(resolve));
  }

  /** Closes held requests without an answer; the provider never received them. */
  dropHeld(): number {
    const n = this.held.length;
    for (const res of this.held.splice(0)) res.destroy();
    return n;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      void this.handle(req, res).catch(() => res.destroy());
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url_ = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/token`;
    return this;
  }

  close(): Promise<void> {
    this.dropHeld();
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const form = new URLSearchParams(body);
    if (form.get('grant_type') === 'refresh_token') {
      if (this.hold) {
        this.held.push(res);
        for (const w of this.heldWaiters.splice(0)) w();
        return;
      }
      await this.beforeRefresh?.(form.get('refresh_token') ?? '');
      this.refreshes++;
    }
    const headers: Record<string, string> = {};
    for (const h of ['content-type', 'authorization', 'accept']) {
      const v = req.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    const upstream = await fetch(this.target, { method: 'POST', headers, body });
    const text = await upstream.text();
    if (upstream.ok) {
      try {
        const t = JSON.parse(text) as IssuedPair;
        if (typeof t.access_token === 'string')
          this.pairs.push({ access_token: t.access_token, refresh_token: t.refresh_token });
      } catch {
        // Not JSON: nothing issued.
      }
    }
    res.writeHead(upstream.status, {
      'content-type': upstream.headers.get('content-type') ?? 'application/json',
      'cache-control': 'no-store',
    });
    res.end(text);
  }
}
