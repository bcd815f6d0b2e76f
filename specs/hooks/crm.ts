/**
 * Hooks of the CRM connector (HubSpot CRM v3), for what a request template cannot say.
 */
import type { CrmDealUpdateInput } from '../../generated/types.ts';
import type { ToolHook, UpstreamRequest } from '../../runtime/tools/types.ts';
import { invalidInput } from '../../runtime/errors.ts';

/**
 * The deal update's PATCH with `good_deal` merged into its `properties` object as "true" / "false" (HubSpot
 * property values are strings). A template can place a value at a fixed key but cannot merge it into an object
 * the caller supplies, hence the hook. An update that would change nothing is refused before anything is sent.
 */
function dealUpdateRequests(input: CrmDealUpdateInput, planned: UpstreamRequest[]): UpstreamRequest[] {
  return planned.map((r) => {
    const body = (r.body ?? {}) as { properties?: Record<string, unknown> };
    const properties = { ...(body.properties ?? {}) };
    if (input.good_deal !== undefined) properties.good_deal = String(input.good_deal);
    if (Object.keys(properties).length === 0) {
      throw invalidInput(
        [{ field: 'properties', message: 'must name at least one property to change (or give good_deal); an empty update would change nothing' }],
        'input for crm_deal_update',
      );
    }
    return { ...r, body: { ...body, properties } };
  });
}

export const dealUpdate: ToolHook<CrmDealUpdateInput> = {
  plan: (input, planned) => dealUpdateRequests(input, planned),
  async run(ctx) {
    const [request] = dealUpdateRequests(ctx.input, ctx.planned);
    return ctx.call(request!);
  },
};
