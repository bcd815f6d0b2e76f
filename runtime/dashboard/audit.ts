/** The audit log: who changed what, when and from where (runtime/audit/log.ts); filters, pages, a JSON-lines export. */
import type { Router } from 'express';
import { ServiceError } from '../../core/errors.ts';
import { auditView } from '../api/routes.ts';
import { BASE, queryValue, render, type DashboardContext } from './context.ts';

const PAGE_SIZE = 100;

export function auditRoutes(r: Router, ctx: DashboardContext): void {
  const { s } = ctx;
  r.get('/audit', async (req, res) => {
    const beforeText = queryValue(req, 'before');
    const before = beforeText ? Number(beforeText) : undefined;
    if (before !== undefined && !(Number.isSafeInteger(before) && before > 0))
      throw new ServiceError(400, 'invalid_input', 'This page link is not valid.');
    const filter = {
      actor: queryValue(req, 'actor').slice(0, 200),
      action: queryValue(req, 'action').slice(0, 100),
      target: queryValue(req, 'target').slice(0, 500),
    };
    const list = await s.store.listAuditEvents({
      actorId: filter.actor || undefined,
      action: filter.action || undefined,
      targetId: filter.target || undefined,
      order: 'desc',
      cursor: before,
      limit: PAGE_SIZE,
    });
    const keep = new URLSearchParams(Object.entries(filter).filter(([, v]) => v));
    render(ctx, req, res, 'audit', {
      title: 'Audit log',
      nav: 'audit',
      filter,
      entries: list.map((e) => ({ ...auditView(e), atMs: e.at, changesText: JSON.stringify(e.changes) })),
      olderHref:
        list.length === PAGE_SIZE
          ? `${BASE}/audit?${new URLSearchParams([...keep, ['before', String(list[list.length - 1]!.seq)]])}`
          : undefined,
      newestHref: before ? `${BASE}/audit?${keep}` : undefined,
    });
  });
}
