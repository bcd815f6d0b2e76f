import type { Account, AccountKey } from './types.ts';

/** A page cursor that no previous page produced (edited, truncated, or from another list). */
export class InvalidCursor extends Error {
  constructor() {
    super('invalid cursor');
    this.name = 'InvalidCursor';
  }
}

/** Accounts are listed by (created_at, id); a cursor holds the last pair of the previous page. */
export function encodeCursor(a: Pick<Account, 'createdAt' | 'id'>): string {
  return Buffer.from(`${a.createdAt}:${a.id}`, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string | undefined): AccountKey | undefined {
  if (!cursor) return undefined;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const idx = text.indexOf(':');
  const createdAt = Number(text.slice(0, idx));
  if (idx <= 0 || !Number.isFinite(createdAt)) throw new InvalidCursor();
  return { createdAt, id: text.slice(idx + 1) };
}
