/** Trigger instances (docs/triggers.md): each one's status, last event, last poll and last error, by status. */
import type { Router } from 'express';
import { ServiceError } from '../../core/errors.ts';
import { TRIGGER_STATUSES, type TriggerStatus } from '../store/types.ts';
import { BASE, queryValue, render, type DashboardContext } from './context.ts';

const PAGE_SIZE = 100;
const BADGE: Record<TriggerStatus, string> = {
  active: 'badge-active',
  paused: 'badge-pending_auth',
  failing: 'badge-expired',
  needs_reauth: 'badge-expired',
};

export function triggerRoutes(r: Router, ctx: DashboardContext): void {
  const { s } = ctx;
  r.get('/triggers', async (req, res) => {
    const status = queryValue(req, 'status') || undefined;
    if (status !== undefined && !TRIGGER_STATUSES.includes(status as TriggerStatus))
      throw new ServiceError(
        400,
        'invalid_input',
        `No status "${status}": it is one of ${TRIGGER_STATUSES.join(', ')}.`,
      );
    const cursor = queryValue(req, 'cursor') || undefined;
    const page = await s.triggers.list({ status: status as TriggerStatus | undefined, limit: PAGE_SIZE, cursor });
    const instances = await Promise.all(page.instances.map((t) => s.triggers.view(t)));
    const q = (extra: Record<string, string>) => {
      const p = new URLSearchParams({ ...(status ? { status } : {}), ...extra });
      return p.size ? `?${p}` : '';
    };
    render(ctx, req, res, 'triggers', {
      title: 'Triggers',
      nav: 'triggers',
      statuses: TRIGGER_STATUSES.map((st) => ({
        name: st,
        href: `${BASE}/triggers?status=${st}`,
        current: st === status,
      })),
      allHref: `${BASE}/triggers`,
      filtered: status !== undefined,
      instances: instances.map((t) => ({ ...t, badge: BADGE[t.status] })),
      nextHref: page.nextCursor ? `${BASE}/triggers${q({ cursor: page.nextCursor })}` : undefined,
      firstHref: cursor ? `${BASE}/triggers${q({})}` : undefined,
    });
  });
}
