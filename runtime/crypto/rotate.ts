import type { Store } from '../store/types.ts';
import { DecryptError, Sealer } from './sealer.ts';
import { aadForCell } from './aad.ts';

export interface RotationReport {
  total: number;
  rotated: number;
  alreadyCurrent: number;
  failed: Array<{ where: string; error: string }>;
  byKey: Record<string, number>;
}

/** Counts sealed values per key id and checks that every one of them decrypts. */
export async function verifySealed(store: Store, sealer: Sealer): Promise<RotationReport> {
  const report: RotationReport = { total: 0, rotated: 0, alreadyCurrent: 0, failed: [], byKey: {} };
  for (const cell of await store.listSealed()) {
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
 * overwritten. Safe to run while the service runs, and to run again.
 */
export async function rotateSealed(store: Store, sealer: Sealer): Promise<RotationReport> {
  const report: RotationReport = { total: 0, rotated: 0, alreadyCurrent: 0, failed: [], byKey: {} };
  for (const cell of await store.listSealed()) {
    report.total++;
    const kid = Sealer.kidOf(cell.value) ?? '?';
    report.byKey[kid] = (report.byKey[kid] ?? 0) + 1;
    if (kid === sealer.activeKid) {
      report.alreadyCurrent++;
      continue;
    }
    const aad = aadForCell(cell);
    try {
      const plain = sealer.open(cell.value, aad);
      if (await store.replaceSealed({ ...cell, value: sealer.seal(plain, aad) }, cell.value)) report.rotated++;
      else
        report.failed.push({
          where: `${cell.table}.${cell.column} ${cell.id}`,
          error: 'changed during rotation; run rotate again',
        });
    } catch (e) {
      report.failed.push({
        where: `${cell.table}.${cell.column} ${cell.id}`,
        error: e instanceof DecryptError ? e.message : String(e),
      });
    }
  }
  return report;
}
