/**
 * The service's settings for V8's garbage collector, applied once at start-up (`tuneGarbageCollector()` at the top
 * of `main.ts`, in the primary and in every worker). Each is a V8 flag that an operator may also give on node's
 * command line, and then the operator's own setting is left as it is (node refuses these flags in NODE_OPTIONS, so
 * the command line is the only place they can come from). Both flags are read by V8 whenever it collects, so setting
 * them at start-up applies from the first collection of the service's own work.
 *
 * **How far the old generation grows between two full collections** (`--heap-growing-percent=100`). After each
 * mark-compact V8 sets the next one's trigger at the live size times a factor it picks from how fast the collector
 * runs against the program (between 1.1 and 4). Under the tool call's load the service keeps about 16 MB live in
 * the old generation and V8 let it grow to 43 MB before collecting, so the peak RSS under load sat at 148-157 MB,
 * most of it garbage waiting. With the factor fixed at 2 the peak was 139-140 MB in three fresh processes, and at
 * 1.5 (`=50`) 130-134 MB in six, at the same CPU per request as far as this machine can tell. 2 is the
 * choice: at 1.5 a mark-compact ran in most 5 s rounds of proxied requests (an
 * 8-11 ms pause each, after a round of tool calls had filled the old generation), at 2 in few.
 *
 * **No allocation-site pretenuring** (`--no-allocation-site-pretenuring`). V8 watches, per place in the code that
 * makes an object or array literal, how many of its objects survive a young-generation collection, and from a high
 * share on it may make that place allocate straight in the old generation. A service's objects live as long as a
 * request does, so what survives when V8 decides depends on how many requests happen to be in flight. Under the
 * bench's tool call load, 9 of 32 fresh processes fell into a state that lasted as long as they ran: each scavenge
 * promoted about 2.5 MB (about 13 KB per call, against about 0.3 MB a scavenge otherwise) and took about 7 ms
 * instead of 1.2, a mark-compact followed every 8-10 scavenges, and a call cost 10-50 % more CPU. The likely
 * cause (V8's traces did not name the place): objects in the old generation that point at young ones keep them
 * alive through every scavenge until the next full collection, dead or not. With pretenuring off, none of 27
 * processes fell into that state, and the CPU per call of those that never fell into it stayed the same.
 */
import { setFlagsFromString } from 'node:v8';

export const HEAP_GROWING_PERCENT = 100;

/** Each setting: the flag the service sets, and what on node's command line means the operator chose their own. */
const SETTINGS: ReadonlyArray<{ flag: string; operators: RegExp }> = [
  { flag: `--heap-growing-percent=${HEAP_GROWING_PERCENT}`, operators: /^--heap[-_]growing[-_]percent(=|$)/ },
  { flag: '--no-allocation-site-pretenuring', operators: /^--(no-)?allocation[-_]site[-_]pretenuring(=|$)/ },
];

/** The V8 flags to set: the service's settings less those that node's command line (`execArgv`) already makes. */
export function garbageCollectorFlags(execArgv: readonly string[]): string[] {
  return SETTINGS.filter((s) => !execArgv.some((arg) => s.operators.test(arg))).map((s) => s.flag);
}

/** Applies the service's garbage collector settings to this process (see above). */
export function tuneGarbageCollector(): void {
  for (const flag of garbageCollectorFlags(process.execArgv)) setFlagsFromString(flag);
}
