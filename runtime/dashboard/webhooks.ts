/**
 * Webhooks (issue 15 point 5): endpoints that receive account lifecycle events. Create one (its signing secret
 * is shown once, on the page that made it), rotate its secret (the new one shown once too), delete it, and read
 * its delivery log (status, attempts, the receiver's last answer and latency) with a button to send a delivery
 * again. The same service as the API (runtime/webhooks/service.ts), so URLs pass the same address guard.
 */
import type { Request, Response, Router } from 'express';
import { WEBHOOK_EVENT_TYPES } from '../../core/api/schemas.ts';
import type { FieldError } from '../../core/tool-types.ts';
import type { Operations } from '../../generated/api/types.ts';
import { checkRequest } from '../api/validate.ts';
import type { WebhookEndpoint } from '../store/types.ts';
import { BASE, fieldErrorsOf, formList, formString, queryValue, render, type DashboardContext } from './context.ts';
import { attachErrors, fieldId, type Field } from './fields.ts';

const webhookPath = (id: string) => `${BASE}/webhooks/${encodeURIComponent(id)}`;
const DELIVERIES_PER_PAGE = 25;

/** What each event means, for the checkboxes. */
const EVENT_HINTS: Record<(typeof WEBHOOK_EVENT_TYPES)[number], string> = {
  'connected_account.created': 'an account was created (before it has credentials)',
  'connected_account.active': 'an account can be used: after OAuth or when credentials were saved',
  'connected_account.expired': 'the provider refused to refresh an account’s token',
  'connected_account.disconnected': 'an account was disconnected',
  'connected_account.deleted': 'an account was deleted, alone or with its connection',
  'connected_account.verification_required': 'an account waits for the user’s verification',
};

interface CreateForm {
  url: string;
  events: string[];
}

export function webhookRoutes(r: Router, ctx: DashboardContext): void {
  const { s } = ctx;

  const listPage = async (
    req: Request,
    res: Response,
    form: CreateForm = { url: '', events: [] },
    errors: FieldError[] = [],
    status = 200,
  ) => {
    const urlField: Field = {
      id: fieldId('url'),
      name: 'url',
      label: 'URL',
      kind: 'input',
      type: 'url',
      value: form.url,
      required: true,
      mono: true,
      placeholder: 'https://app.example.com/hooks/agent-connector',
      hint: 'Events are POSTed here as JSON, signed as the Standard Webhooks specification says. A private address is refused unless its host is named in `WEBHOOK_ALLOWED_HOSTS`.',
      autocomplete: 'off',
    };
    const general = attachErrors([urlField], errors, (e) => (e.field.startsWith('events') ? undefined : e.field));
    const eventErrors = general.filter((e) => e.field.startsWith('events'));
    render(
      ctx,
      req,
      res,
      'webhooks',
      {
        title: 'Webhooks',
        nav: 'webhooks',
        urlField,
        errors: general.filter((e) => !e.field.startsWith('events')),
        eventsError: eventErrors.length ? eventErrors.map((e) => e.message).join('; ') : undefined,
        events: WEBHOOK_EVENT_TYPES.map((type) => ({
          id: fieldId(`event-${type}`),
          type,
          hint: EVENT_HINTS[type],
          checked: form.events.includes(type),
        })),
        webhooks: (await s.store.listWebhookEndpoints()).map((e) => ({
          id: e.id,
          url: e.url,
          events: e.events,
          createdAt: e.createdAt,
          href: webhookPath(e.id),
        })),
      },
      status,
    );
  };

  /** The page that shows a secret once: after creating an endpoint, and after rotating its secret. */
  const secretPage = (req: Request, res: Response, e: WebhookEndpoint, secret: string, rotated: boolean) => {
    // Rendered in this response only (no redirect, nothing kept): the page is no-store like every dashboard page.
    render(ctx, req, res, 'webhook-secret', {
      title: rotated ? 'Webhook secret rotated' : 'Webhook created',
      nav: 'webhooks',
      rotated,
      url: e.url,
      href: webhookPath(e.id),
      secret,
    });
  };

  r.get('/webhooks', async (req, res) => listPage(req, res));

  r.post('/webhooks', async (req, res) => {
    const form: CreateForm = { url: formString(req.body, 'url').trim(), events: formList(req.body, 'events') };
    try {
      const body = checkRequest<Operations['createWebhook']['body']>('createWebhook', 'body', form);
      const { endpoint, secret } = await s.webhooks.create(body.url, body.events);
      secretPage(req, res, endpoint, secret, false);
    } catch (e) {
      const errors = fieldErrorsOf(e);
      if (!errors) throw e;
      await listPage(req, res, form, errors, 400);
    }
  });

  r.get('/webhooks/:id', async (req, res) => {
    const e = await s.webhooks.get(req.params.id);
    const cursor = queryValue(req, 'cursor');
    const page = await s.webhooks.deliveries(e.id, DELIVERIES_PER_PAGE, cursor || undefined);
    render(ctx, req, res, 'webhook', {
      title: `Webhook ${e.url}`,
      nav: 'webhooks',
      webhook: { id: e.id, url: e.url, events: e.events, createdAt: e.createdAt, updatedAt: e.updatedAt },
      href: webhookPath(e.id),
      olderHref: page.nextCursor ? `${webhookPath(e.id)}?cursor=${encodeURIComponent(page.nextCursor)}` : undefined,
      newestHref: cursor ? webhookPath(e.id) : undefined,
      deliveries: page.deliveries.map((d) => {
        const data = (JSON.parse(d.payload) as { data?: Record<string, unknown> }).data ?? {};
        return {
          id: d.id,
          eventId: d.eventId,
          type: d.eventType,
          identifier: typeof data.identifier === 'string' ? data.identifier : undefined,
          connection: typeof data.connection_name === 'string' ? data.connection_name : undefined,
          status: d.status,
          attempts: d.attempts,
          lastStatus: d.lastStatus,
          lastError: d.lastError,
          latencyMs: d.lastLatencyMs,
          createdAt: d.createdAt,
          deliveredAt: d.deliveredAt,
          nextAttemptAt: d.status === 'pending' ? d.nextAttemptAt : null,
          redeliverAction: `${webhookPath(e.id)}/deliveries/${encodeURIComponent(d.id)}/redeliver`,
        };
      }),
    });
  });

  r.post('/webhooks/:id/deliveries/:deliveryId/redeliver', async (req, res) => {
    const d = await s.webhooks.redeliver(req.params.id, req.params.deliveryId);
    res.redirect(303, `${webhookPath(d.endpointId)}?done=webhook-redelivered`);
  });

  r.get('/webhooks/:id/rotate-secret', async (req, res) => {
    const e = await s.webhooks.get(req.params.id);
    render(ctx, req, res, 'confirm', {
      title: 'Rotate the signing secret?',
      nav: 'webhooks',
      message: `Deliveries to ${e.url} are signed with a new secret from now on, and the receiver must verify with it: signatures made with the current secret stop being sent. The new secret is shown once.`,
      action: `${webhookPath(e.id)}/rotate-secret`,
      button: 'Rotate the secret',
      cancel: webhookPath(e.id),
    });
  });

  r.post('/webhooks/:id/rotate-secret', async (req, res) => {
    const { endpoint, secret } = await s.webhooks.rotateSecret(req.params.id);
    secretPage(req, res, endpoint, secret, true);
  });

  r.get('/webhooks/:id/delete', async (req, res) => {
    const e = await s.webhooks.get(req.params.id);
    render(ctx, req, res, 'confirm', {
      title: 'Delete the webhook?',
      nav: 'webhooks',
      message: `No more events are sent to ${e.url}, including deliveries still being retried, and its delivery log is deleted. This cannot be undone.`,
      action: `${webhookPath(e.id)}/delete`,
      button: 'Delete the webhook',
      cancel: webhookPath(e.id),
    });
  });

  r.post('/webhooks/:id/delete', async (req, res) => {
    await s.webhooks.delete(req.params.id);
    res.redirect(303, `${BASE}/webhooks?done=webhook-deleted`);
  });
}
