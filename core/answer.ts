/**
 * The names the service adds to every tool's input and answer (shared by the generator, which declares them in
 * each tool's schemas, and the runtime, which reads and writes them). None is ever sent upstream.
 */

/** Input: `concise` (the default) or `detailed` (the provider's answer unchanged). */
export const RESPONSE_FORMAT = 'response_format';
/** Input and answer of a list tool: where the next part of the list starts. */
export const NEXT_CURSOR = 'next_cursor';
/** Answer: what was left out to fit the answer budget. */
export const TRUNCATED = 'truncated';

export const RESPONSE_FORMATS = ['concise', 'detailed'] as const;
export type ResponseFormat = (typeof RESPONSE_FORMATS)[number];

/** The longest `next_cursor` a tool takes; the service makes none longer (an input too large for one gets none). */
export const CURSOR_MAX_LENGTH = 16384;
