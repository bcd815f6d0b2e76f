/**
 * A Standard Webhooks receiver for the tests that follow events to a client's endpoint: it verifies each delivery
 * with the `standardwebhooks` library (signature, timestamp window, id) against the endpoint's secret, keeps what
 * it accepted in `received` (answering 204) and the library's reason for what it refused in `refused` (400).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedEvent<D> {
  /** The delivery's webhook-id header. */
  id: string;
  type: string;
  data: D;
}

/**
 * Listens on loopback; `secret` is read at each delivery (the endpoint, and so its secret, is made after the
 * receiver's URL is known). Returns the URL to register (`…/hooks`) and a close for afterAll.
 */
export async function startWebhookReceiver<D>(into: {
  received: Array<ReceivedEvent<D>>;
  refused: string[];
  secret: () => string;
}): Promise<{ url: string; close(): void }> {
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      try {
        const event = new Webhook(into.secret()).verify(body, req.headers as Record<string, string>) as {
          type: string;
          data: D;
        };
        into.received.push({ id: String(req.headers['webhook-id']), type: event.type, data: event.data });
        res.writeHead(204).end();
      } catch (e) {
        into.refused.push((e as Error).message);
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
