/**
 * Figures of the reliability and security suite. Each test file records what it tried and what failed
 * under one of the summary's categories; the summary reporter prints the table when the run ends.
 * Records are files under test-output/reliability/, so test files running in separate workers add up.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

export type Category =
  | 'faults injected'
  | 'inputs fuzzed'
  | 'crashes survived'
  | 'attacks tried'
  | 'secrets scanned'
  | 'load'
  // The findings of issue 12, each its own row: what the outside attack broke, tried again on every run.
  | 'sign-in bursts'
  | 'link replays'
  | 'header spellings'
  | 'IPv6 forms'
  | 'slow bodies'
  // The findings of issue 34 (the third outside attack), likewise.
  | 'HTTP/2 requests'
  | 'messages before authentication'
  | 'query bounds'
  | 'HTTP/2 slow clients'
  | 'verification keeps the account'
  | 'MCP links verified'
  | 'HTTP/2 reset floods'
  | 'host spellings'
  // Issue 39: the official MCP conformance suite, per protocol revision.
  | 'MCP conformance';

export const SUMMARY_DIR = join(process.cwd(), 'test-output', 'reliability');

export interface Figure {
  category: Category;
  /** What was tried, e.g. "proxy path traversal (raw and encoded)". */
  what: string;
  tried: number;
  failed: number;
  /** Extra figures worth printing (latency, memory...). */
  detail?: string;
}

/** Records a figure and prints it, so every group shows its numbers in the test output. */
export function record(f: Figure): void {
  mkdirSync(SUMMARY_DIR, { recursive: true });
  appendFileSync(join(SUMMARY_DIR, `${process.pid}.jsonl`), `${JSON.stringify(f)}\n`);
  console.log(`[${f.category}] ${f.what}: ${f.tried} tried, ${f.failed} failed${f.detail ? ` (${f.detail})` : ''}`);
}

/** What a test file tried, and how many of those tries failed, for its figure. */
export interface Tally {
  tried: number;
  failed: number;
}

/** Runs `fn` counted as `n` tries; if it throws, that is one failure, and the error goes on to fail the test. */
export async function tallied(tally: Tally, n: number, fn: () => Promise<void>): Promise<void> {
  tally.tried += n;
  try {
    await fn();
  } catch (e) {
    tally.failed++;
    throw e;
  }
}
