/**
 * Hooks of the support-desk connector: the Zendesk webhook and trigger behind its push triggers (docs/triggers.md,
 * "Push triggers"). A webhook posting to the instance's ingress URL (POST /api/v2/webhooks), its signing secret
 * read back (GET /api/v2/webhooks/{id}/signing_secret) for the engine to verify X-Zendesk-Webhook-Signature, and a
 * desk trigger (POST /api/v2/triggers) that notifies the webhook on ticket creation or update with a JSON body of
 * the ticket's fields; both deleted with the instance.
 */
import { ProviderError } from '../../core/errors.ts';
import type { TriggerPushContext, TriggerPushHook } from '../../core/tool-types.ts';

/** The body the desk trigger sends: Zendesk placeholders, filled in by the desk for each ticket. */
export const TICKET_BODY = {
  ticket: {
    id: '{{ticket.id}}',
    subject: '{{ticket.title}}',
    status: '{{ticket.status}}',
    priority: '{{ticket.priority}}',
    requester_id: '{{ticket.requester.id}}',
    assignee_id: '{{ticket.assignee.id}}',
    group_id: '{{ticket.group.id}}',
    tags: '{{ticket.tags}}',
    url: '{{ticket.link}}',
    created_at: '{{ticket.created_at_with_timestamp}}',
    updated_at: '{{ticket.updated_at_with_timestamp}}',
  },
};

async function remove(ctx: TriggerPushContext, path: string): Promise<void> {
  try {
    await ctx.call({ method: 'DELETE', url: `${ctx.base()}${path}`, headers: {} });
  } catch (e) {
    if (!(e instanceof ProviderError && e.status === 404)) throw e;
  }
}

function deskHook(updateType: 'Create' | 'Change'): TriggerPushHook {
  return {
    async register(ctx) {
      const made = (await ctx.call({
        method: 'POST',
        url: `${ctx.base()}/v2/webhooks`,
        headers: { 'content-type': 'application/json' },
        body: {
          webhook: {
            name: `Agent connector trigger ${ctx.instanceId}`,
            status: 'active',
            endpoint: ctx.ingressUrl,
            http_method: 'POST',
            request_format: 'json',
            subscriptions: ['conditional_ticket_events'],
          },
        },
      })) as { webhook?: { id?: unknown } };
      const webhookId = made.webhook?.id;
      if (typeof webhookId !== 'string' && typeof webhookId !== 'number') {
        throw new Error('the desk answered the webhook without an id');
      }
      const id = encodeURIComponent(String(webhookId));
      try {
        const signing = (await ctx.call({
          method: 'GET',
          url: `${ctx.base()}/v2/webhooks/${id}/signing_secret`,
          headers: {},
        })) as { signing_secret?: { secret?: unknown } };
        const secret = signing.signing_secret?.secret;
        if (typeof secret !== 'string' || !secret) throw new Error('the desk answered no webhook signing secret');
        const trigger = (await ctx.call({
          method: 'POST',
          url: `${ctx.base()}/v2/triggers`,
          headers: { 'content-type': 'application/json' },
          body: {
            trigger: {
              title: `Agent connector ${updateType === 'Create' ? 'ticket created' : 'ticket updated'} ${ctx.instanceId}`,
              conditions: { all: [{ field: 'update_type', operator: 'is', value: updateType }] },
              actions: [{ field: 'notification_webhook', value: [String(webhookId), JSON.stringify(TICKET_BODY)] }],
            },
          },
        })) as { trigger?: { id?: unknown } };
        const triggerId = trigger.trigger?.id;
        if (typeof triggerId !== 'string' && typeof triggerId !== 'number') {
          throw new Error('the desk answered the trigger without an id');
        }
        return { state: { webhookId: String(webhookId), triggerId: String(triggerId) }, secret, renewAt: null };
      } catch (e) {
        // No webhook is left behind that nothing notifies.
        await remove(ctx, `/v2/webhooks/${id}`).catch(() => {});
        throw e;
      }
    },
    async unregister(ctx) {
      const { webhookId, triggerId } = ctx.state as { webhookId?: string; triggerId?: string };
      if (triggerId) await remove(ctx, `/v2/triggers/${encodeURIComponent(triggerId)}`);
      if (webhookId) await remove(ctx, `/v2/webhooks/${encodeURIComponent(webhookId)}`);
    },
  };
}

export const helpdeskTicketCreatedPush = deskHook('Create');
export const helpdeskTicketUpdatedPush = deskHook('Change');
