import type { SealedCell, Store } from '../store/types.ts';
import { DecryptError, Sealer } from './sealer.ts';
import { aadForCell } from './aad.ts';

export interface RotationReport {
  total: number;
  rotated: number;
  alreadyCurrent: number;
  failed: Array<{ where: string; error: string }>;
  byKey: Record<string, number>;
}

/** Sealed values read and written per batch: memory and each transaction stay bounded, whatever the store holds. */
const PAGE = 500;

/** Every sealed value, a page at a time (keyset pages: each one an index range). */
async function* sealedPages(store: Store, pageSize: number): AsyncGenerator<SealedCell[]> {
  let after: SealedCell | undefined;
  for (;;) {
    const page = await store.listSealed(after, pageSize);
    if (!page.length) return;
    yield page;
    after = page[page.length - 1];
  }
}

/** Counts sealed values per key id and checks that every one of them decrypts. */
export async function verifySealed(store: Store, sealer: Sealer, pageSize = PAGE): Promise<RotationReport> {
  const report: RotationReport = { total: 0, rotated: 0, alreadyCurrent: 0, failed: [], byKey: {} };
  for await (const page of sealedPages(store, pageSize))
    for (const cell of page) {
      report.total++;
      const kid = Sealer.kidOf(cell.value) ?? '?';
      report.byKey[kid] = (report.byKey[kid] ?? 0) + 1;
      try {
        sealer.open(cell.value, aadForCell(cell));
      } catch (e) {
        report.failed.push({ where: `${cell.table}.${cell.column} ${cell.id}`, error: (e as Error).message });
      }
    }
  return report;
}

/**
 * Re-encrypts every sealed value with the active key (a fresh IV each), one compare-and-set write per
 * value, so a value changed concurrently by the running service is left for the next pass rather than
 * overwritten. Safe to run while the service runs, and to run again. Works a page at a time, the page's writes
 * in one transaction: memory stays bounded, and a service on the same SQLite file waits for one short
 * transaction at most, not for a million single writes.
 */
export async function rotateSealed(store: Store, sealer: Sealer, pageSize = PAGE): Promise<RotationReport> {
  const report: RotationReport = { total: 0, rotated: 0, alreadyCurrent: 0, failed: [], byKey: {} };
  for await (const page of sealedPages(store, pageSize)) {
    const resealed: Array<{ cell: SealedCell; previous: string }> = [];
    for (const cell of page) {
      report.total++;
      const kid = Sealer.kidOf(cell.value) ?? '?';
      report.byKey[kid] = (report.byKey[kid] ?? 0) + 1;
      if (kid === sealer.activeKid) {
        report.alreadyCurrent++;
        continue;
      }
      const aad = aadForCell(cell);
      try {
        resealed.push({
          cell: { ...cell, value: sealer.seal(sealer.open(cell.value, aad), aad) },
          previous: cell.value,
        });
      } catch (e) {
        report.failed.push({
          where: `${cell.table}.${cell.column} ${cell.id}`,
          error: e instanceof DecryptError ? e.message : String(e),
        });
      }
    }
    if (!resealed.length) continue;
    const replaced = await store.transaction(async (tx) => {
      const out: boolean[] = [];
      for (const { cell, previous } of resealed) out.push(await tx.replaceSealed(cell, previous));
      return out;
    });
    replaced.forEach((ok, i) => {
      if (ok) report.rotated++;
      else
        report.failed.push({
          where: `${resealed[i]!.cell.table}.${resealed[i]!.cell.column} ${resealed[i]!.cell.id}`,
          error: 'changed during rotation; run rotate again',
        });
    });
  }
  return report;
}
