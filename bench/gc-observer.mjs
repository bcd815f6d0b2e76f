/**
 * Loaded into a service by bench/gc.ts (`node --import bench/gc-observer.mjs …`): counts the process's garbage
 * collections by kind, with their total pause, and writes the counts as JSON to ACS_GC_STATS_FILE every 200 ms.
 */
import { writeFileSync } from 'node:fs';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import process from 'node:process';
import { setInterval } from 'node:timers';

const file = process.env.ACS_GC_STATS_FILE;
const KINDS = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'markCompact',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakCallbacks',
};
const stats = {};
if (file) {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = KINDS[e.detail?.kind] ?? 'other';
      const s = (stats[kind] ??= { count: 0, ms: 0 });
      s.count++;
      s.ms += e.duration;
    }
  }).observe({ entryTypes: ['gc'] });
  setInterval(() => writeFileSync(file, JSON.stringify(stats)), 200).unref();
}
