import { sql } from 'kysely';
import { SqlStoreBase } from './base.ts';
import { SEALED_COLUMNS, SEALED_META_KEYS } from '../rows.ts';
import type { SealedCell, SealedStore } from '../types.ts';

/** Sealed values live in these (table, column) pairs only; replaceSealed refuses any other. */
const SEALED_ID_COLUMN = new Map<string, string>([
  ...SEALED_COLUMNS.map(([table, id, column]) => [`${table}.${column}`, id] as const),
  ['meta.value', 'key'],
]);

/** Every sealed value, page by page, for re-sealing under a new key. */
export abstract class SealedGroup extends SqlStoreBase implements SealedStore {
  async listSealed(after: SealedCell | undefined, limit: number): Promise<SealedCell[]> {
    const out: SealedCell[] = [];
    const sources = [
      ...SEALED_COLUMNS.map(([table, idCol, col]) => ({ table, idCol, col })),
      { table: 'meta' as const, idCol: 'key', col: 'value' },
    ];
    let i = after ? sources.findIndex((x) => x.table === after.table && x.col === after.column) : 0;
    if (i < 0) throw new Error(`${after!.table}.${after!.column} does not hold sealed values`);
    let afterId = after?.id;
    for (; i < sources.length && out.length < limit; i++, afterId = undefined) {
      const { table, idCol, col } = sources[i]!;
      // Keyset pages on the primary key: each page is one index range, whatever the table holds.
      const { rows } = await sql<{ id: string; value: string }>`
        SELECT ${sql.ref(idCol)} AS id, ${sql.ref(col)} AS value FROM ${sql.table(table)}
        WHERE ${sql.ref(col)} IS NOT NULL
          ${afterId === undefined ? sql`` : sql`AND ${sql.ref(idCol)} > ${afterId}`}
          ${table === 'meta' ? sql`AND ${sql.ref(idCol)} IN (${sql.join(SEALED_META_KEYS)})` : sql``}
        ORDER BY ${sql.ref(idCol)} LIMIT ${limit - out.length}
      `.execute(this.db);
      for (const r of rows) out.push({ table, column: col, id: r.id, value: r.value });
    }
    return out;
  }
  async replaceSealed(cell: SealedCell, previous: string) {
    const idCol = SEALED_ID_COLUMN.get(`${cell.table}.${cell.column}`);
    if (!idCol) throw new Error(`${cell.table}.${cell.column} does not hold sealed values`);
    const r = await sql`
      UPDATE ${sql.table(cell.table)} SET ${sql.ref(cell.column)} = ${cell.value}
      WHERE ${sql.ref(idCol)} = ${cell.id} AND ${sql.ref(cell.column)} = ${previous}
    `.execute(this.db);
    if (
      r.numAffectedRows === 1n &&
      cell.table !== 'oauth_states' &&
      cell.table !== 'oauth_links' &&
      cell.table !== 'webhook_endpoints' &&
      cell.table !== 'trigger_instances' &&
      cell.table !== 'account_verifications' &&
      cell.table !== 'mcp_oauth_settings'
    ) {
      this.changed(cell.table, cell.id);
    }
    return r.numAffectedRows === 1n;
  }
}
