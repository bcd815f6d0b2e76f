/**
 * The CRM connector's own transforms (HubSpot CRM API v3), used by specs/crm.yaml's request templates as
 * `{param|name}`.
 */
import type { ConnectorTransforms } from '../../core/transforms.ts';

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
