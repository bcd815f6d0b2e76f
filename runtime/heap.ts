/**
 * How far V8 lets the old generation grow between two full collections.
 *
 * After each mark-compact V8 sets the next one's trigger at the live size times a factor it picks from how fast
 * the collector runs against the program (between 1.1 and 4). Under the tool call's load the service keeps about
 * 16 MB live in the old generation and V8 let it grow to 43 MB before collecting, so the peak RSS under load sat
 * at 148-157 MB, most of it garbage waiting. With the factor fixed at 2 (`--heap-growing-percent=100`) the peak was
 * 139-140 MB in three fresh processes, and at 1.5 (`=50`) 130-134 MB in six, at the same CPU per request as far as
 * this machine can tell (bench/RESULTS.md, issue 14, eighth part). 2 is the choice: at 1.5 a mark-compact ran in
 * most 5 s rounds of proxied requests (an 8-11 ms pause each, after a round of tool calls had filled the old
 * generation), at 2 in few.
 *
 * The flag is read whenever V8 computes a new limit, so setting it at start-up applies from the first collection.
 * An operator's own `--heap-growing-percent` on node's command line is left as it is (node refuses the flag in
 * NODE_OPTIONS, so the command line is the only place it can come from).
 */
import { setFlagsFromString } from 'node:v8';

export const HEAP_GROWING_PERCENT = 100;

/** The V8 flag to set, or undefined when node's command line already sets it. */
export function heapGrowthFlag(execArgv: readonly string[]): string | undefined {
  if (execArgv.some((arg) => /^--heap[-_]growing[-_]percent(=|$)/.test(arg))) return undefined;
  return `--heap-growing-percent=${HEAP_GROWING_PERCENT}`;
}

/** Applies the service's heap growth factor to this process (see above). */
export function limitHeapGrowth(): void {
  const flag = heapGrowthFlag(process.execArgv);
  if (flag) setFlagsFromString(flag);
}
