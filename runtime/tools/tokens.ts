/**
 * Answer sizes in tokens, counted with a real BPE tokenizer (`gpt-tokenizer`, o200k_base: the encoding of GPT-4o
 * and later), loaded on first use. The count is always bounded by a limit: the tokenizer stops as soon as the
 * limit is passed, so a ten-megabyte answer costs no more to judge than one just over the budget. A text of at most
 * `limit` UTF-8 bytes is within it without tokenizing (a BPE token is at least one byte).
 */
import type { GptEncoding } from 'gpt-tokenizer/GptEncoding';

type WithinLimit = (text: string, limit: number) => number | false;
let encoding: Promise<WithinLimit> | undefined;

/** Text provider data may hold (`<|endoftext|>`) is counted as text, never refused as a special token. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

function load(): Promise<WithinLimit> {
  encoding ??= import('gpt-tokenizer/encoding/o200k_base').then(
    (m: { isWithinTokenLimit: GptEncoding['isWithinTokenLimit'] }) => (text: string, limit: number) =>
      m.isWithinTokenLimit(text, limit, AS_TEXT),
  );
  return encoding;
}

export interface TokenCounter {
  /** The tokens of `text` when at most `limit`, else false (counting stops past the limit). */
  within(text: string, limit: number): number | false;
}

export async function tokenCounter(): Promise<TokenCounter> {
  const within = await load();
  return {
    within: (text, limit) => (limit < 0 ? false : within(text, limit)),
  };
}

/** Whether `text` surely fits `limit` tokens without counting them (at most one token per byte). */
export function surelyWithin(text: string, limit: number): boolean {
  return text.length <= limit && Buffer.byteLength(text) <= limit;
}
