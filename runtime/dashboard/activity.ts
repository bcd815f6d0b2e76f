/** Recent tool executions and proxy calls: what ran, for whom, how it ended and how long it took — never payloads. */
import type { Router } from 'express';
import { ServiceError } from '../../core/errors.ts';
import { BASE, queryValue, render, type DashboardContext } from './context.ts';

const PAGE_SIZE = 100;

export function activityRoutes(r: Router, ctx: DashboardContext): void {
  const { s } = ctx;
  r.get('/activity', async (req, res) => {
    const beforeText = queryValue(req, 'before');
    const before = beforeText ? Number(beforeText) : undefined;
    if (before !== undefined && !(Number.isInteger(before) && before > 0))
      throw new ServiceError(400, 'invalid_input', 'This page link is not valid.');
    // Records are written in batches; flushing first makes the calls just made show up.
    await s.activity.flush();
    const list = await s.store.listActivity(PAGE_SIZE, before);
    render(ctx, req, res, 'activity', {
      title: 'Activity',
      nav: 'activity',
      records: list.map((a) => ({
        ...a,
        ok: a.status < 400,
        toolHref: a.kind === 'tool' ? `${BASE}/tools/${encodeURIComponent(a.name)}` : undefined,
      })),
      olderHref: list.length === PAGE_SIZE ? `${BASE}/activity?before=${list[list.length - 1]!.createdAt}` : undefined,
      newestHref: before ? `${BASE}/activity` : undefined,
    });
  });
}
