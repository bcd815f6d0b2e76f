/**
 * The CRM connector's own transforms (HubSpot CRM API v3), used by specs/crm.yaml's request templates as
 * `{param|name}`.
 */
import type { ConnectorTransforms } from '../../core/transforms.ts';
import type { TriggerPushHook } from '../../core/tool-types.ts';

export const transforms = {
  /**
   * A CRM filter JSON string (validated beforehand by the tool's rules) → the array of filter groups the search API
   * wants: a list of groups, `{filterGroups: [...]}`, or one group `{filters: [...]}`.
   */
  filter_groups: (v: unknown): unknown => {
    const parsed: unknown = typeof v === 'string' ? JSON.parse(v) : v;
    if (Array.isArray(parsed)) return parsed;
    if (parsed && typeof parsed === 'object') {
      const o = parsed as Record<string, unknown>;
      if (Array.isArray(o.filterGroups)) return o.filterGroups;
      if (Array.isArray(o.filters)) return [o];
    }
    return parsed;
  },
} satisfies ConnectorTransforms;

/**
 * The push triggers' hook (docs/triggers.md, "Push triggers"): HubSpot app webhooks are subscribed in the app's
 * settings, one target URL (the connection's ingress) for every portal that installed the app, so nothing is
 * registered per account. An instance reads its portal's id (GET /account-info/v3/details), by which notifications
 * (`portalId`) are routed to it.
 */
export const crmPortalPush: TriggerPushHook = {
  async register(ctx) {
    const details = (await ctx.call({ method: 'GET', url: `${ctx.base()}/account-info/v3/details`, headers: {} })) as {
      portalId?: unknown;
    };
    const portalId = details.portalId;
    if (typeof portalId !== 'number' && typeof portalId !== 'string') {
      throw new Error('HubSpot answered the account details without a portalId');
    }
    return { state: { portalId: String(portalId) }, route: String(portalId), renewAt: null };
  },
  async unregister() {
    // The app's subscriptions belong to the app, not to the account: the instance stops hearing by being deleted.
  },
};
