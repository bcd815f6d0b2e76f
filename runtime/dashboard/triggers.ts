/**
 * Trigger instances (docs/triggers.md): each one's status, last event, last poll and last error, by status; pause,
 * resume and delete per instance, as plain POST forms (CSRF-checked like every dashboard form; no script needed).
 */
import type { Request, Router } from 'express';
import { ServiceError } from '../../core/errors.ts';
import { TRIGGER_STATUSES, type TriggerStatus } from '../store/types.ts';
import { BASE, formString, queryValue, render, type DashboardContext } from './context.ts';

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
      instances: instances.map((t) => ({
        ...t,
        badge: BADGE[t.status],
        href: triggerPath(t.id),
        paused: t.status === 'paused',
      })),
      // Where a row's form comes back to: this page, as filtered.
      back: status ?? '',
      nextHref: page.nextCursor ? `${BASE}/triggers${q({ cursor: page.nextCursor })}` : undefined,
      firstHref: cursor ? `${BASE}/triggers${q({})}` : undefined,
    });
  });

  // Pause, resume and delete: each answers with a redirect back to the list (its status filter kept).
  const back = (req: Request) => {
    const st = formString(req.body, 'back');
    return `${BASE}/triggers${TRIGGER_STATUSES.includes(st as TriggerStatus) ? `?status=${st}` : ''}`;
  };
  r.post('/triggers/:id/pause', async (req, res) => {
    await s.triggers.pause(req.params.id);
    res.redirect(303, back(req));
  });
  r.post('/triggers/:id/resume', async (req, res) => {
    await s.triggers.resume(req.params.id);
    res.redirect(303, back(req));
  });
  r.get('/triggers/:id/delete', async (req, res) => {
    const t = await s.triggers.view(await s.triggers.get(req.params.id));
    render(ctx, req, res, 'confirm', {
      title: 'Delete the trigger instance?',
      nav: 'triggers',
      message: `${t.trigger} for ${t.identifier ?? t.connected_account_id} (${t.connection_name ?? t.connector}) stops for good: no more events are sent for it, and its position in the provider's feed is forgotten. This cannot be undone.`,
      action: `${triggerPath(t.id)}/delete`,
      button: 'Delete the trigger instance',
      cancel: `${BASE}/triggers`,
    });
  });
  r.post('/triggers/:id/delete', async (req, res) => {
    await s.triggers.delete(req.params.id);
    res.redirect(303, `${BASE}/triggers`);
  });
}

const triggerPath = (id: string) => `${BASE}/triggers/${encodeURIComponent(id)}`;
