/**
 * A tool's answer as an agent gets it (issue 40), the same for every connector, from what the tool's YAML declares
 * (`output`): the concise answer (the fields the output schema names, HTML bodies as text) unless the caller asks
 * for `response_format: "detailed"` (the provider's answer unchanged); an answer over the token budget cut at an
 * item boundary of its list, with `next_cursor` and a `truncated` note; and `next_cursor` whenever the provider
 * has another page. `next_cursor` is the tool's input (secrets left out) and how many items of that page were
 * already returned, so a call with it alone, or with the same input again, goes on where the last one stopped.
 */
import { isDeepStrictEqual } from 'node:util';
import { CURSOR_MAX_LENGTH, NEXT_CURSOR, RESPONSE_FORMAT, TRUNCATED, type ResponseFormat } from '../../core/answer.ts';
import type { AnswerShape, FieldError, ToolDefinition } from '../../core/tool-types.ts';
import { htmlConverter, looksLikeHtml } from './html-text.ts';
import { surelyWithin, tokenCounter, type TokenCounter } from './tokens.ts';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Most items of one page a cursor skips (a provider page is never near this). */
const MAX_WITHIN = 100_000;
/** Tokens kept free for `next_cursor` and the `truncated` note when a list is cut. */
const NOTE_TOKENS = 160;
/** Rounds of cutting the largest part of an answer before giving up on it (each round at least halves that part). */
const MAX_CUT_ROUNDS = 48;

// ---------------------------------------------------------------------------------------------------------------
// The input: the service's own parameters, and a cursor read back into the input it continues

export interface AnswerRequest {
  format: ResponseFormat;
  /** Items of the page to leave out at the start (a cursor's, for a provider that cannot start mid-page). */
  within: number;
}

interface Cursor {
  /** The tool. */
  t: string;
  /** Its input, without secrets and the service's own parameters. */
  i: Json;
  /** Items of the page the input selects that were already returned. */
  w: number;
}

function encodeCursor(c: Cursor): string | undefined {
  const text = Buffer.from(JSON.stringify(c)).toString('base64url');
  return text.length <= CURSOR_MAX_LENGTH ? text : undefined;
}

const cursorError = (message: string) => [{ field: NEXT_CURSOR, message }];

/** The parameters that select the page: a cursor's value for them wins over the input's. */
function pagingParams(tool: ToolDefinition): Set<string> {
  const p = tool.output.paging;
  return new Set(p ? [p.param, ...(p.token ? [p.token] : [])] : []);
}

/**
 * The input a call stands for: a `next_cursor` of this tool is read back into the input it was made for (the
 * caller may repeat that input, or leave any of it out; a parameter given with another value is refused, since the
 * cursor's position belongs to that query). Errors name `next_cursor`.
 */
export function continuedInput(
  tool: ToolDefinition,
  raw: unknown,
): { input: unknown; within: number; errors: FieldError[] } {
  if (!isObject(raw) || raw[NEXT_CURSOR] === undefined) return { input: raw, within: 0, errors: [] };
  const token = raw[NEXT_CURSOR];
  if (typeof token !== 'string' || !tool.output.items) return { input: raw, within: 0, errors: [] }; // the validator names what is wrong
  let cursor: Cursor;
  try {
    cursor = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as Cursor;
  } catch {
    return { input: raw, within: 0, errors: cursorError('is not a next_cursor this service gave') };
  }
  if (
    !isObject(cursor) ||
    typeof cursor.t !== 'string' ||
    !isObject(cursor.i) ||
    !Number.isInteger(cursor.w) ||
    cursor.w < 0 ||
    cursor.w > MAX_WITHIN
  )
    return { input: raw, within: 0, errors: cursorError('is not a next_cursor this service gave') };
  if (cursor.t !== tool.name)
    return {
      input: raw,
      within: 0,
      errors: cursorError(`was given by ${cursor.t}, not by ${tool.name}: call ${cursor.t} with it`),
    };
  const paging = pagingParams(tool);
  const secret = new Set(tool.secretInputs ?? []);
  const merged: Json = {};
  for (const [k, v] of Object.entries(cursor.i)) Object.defineProperty(merged, k, { value: v, enumerable: true });
  for (const [k, v] of Object.entries(raw)) {
    if (k === NEXT_CURSOR || k === RESPONSE_FORMAT || secret.has(k)) {
      Object.defineProperty(merged, k, { value: v, enumerable: true, writable: true });
      continue;
    }
    if (paging.has(k)) continue;
    if (!Object.hasOwn(cursor.i, k) || !isDeepStrictEqual(cursor.i[k], v)) {
      return {
        input: raw,
        within: 0,
        errors: cursorError(
          `continues another query: ${k} differs from the input it was made for (leave ${k} out, or start again without next_cursor)`,
        ),
      };
    }
  }
  return { input: merged, within: cursor.w, errors: [] };
}

/** The input without the service's own parameters (what the request builder and hooks get), and those. */
export function splitAnswerParams(input: Json): { input: Json; request: Omit<AnswerRequest, 'within'> } {
  const { [RESPONSE_FORMAT]: format, [NEXT_CURSOR]: _cursor, ...rest } = input;
  return { input: rest, request: { format: format === 'detailed' ? 'detailed' : 'concise' } };
}

// ---------------------------------------------------------------------------------------------------------------
// The concise answer

/** Any answer as an object: a bare list is `items`, text is `text`, no content is `{}`. */
export function asObject(value: unknown): Json {
  if (isObject(value)) return value;
  if (Array.isArray(value)) return { items: value };
  if (value === undefined || value === null || value === '') return {};
  if (typeof value === 'string') return { text: value };
  return { value };
}

/**
 * The value at a dotted path; a number segment indexes a list (`results.0.hits`), and a key that holds dots itself
 * (`@odata.nextLink`) is found whole.
 */
function valueAt(value: unknown, path: readonly string[]): unknown {
  let cur = value;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i]!;
    if (Array.isArray(cur) && /^\d+$/.test(seg)) {
      cur = cur[Number(seg)];
      continue;
    }
    if (!isObject(cur)) return undefined;
    const obj = cur;
    const whole = path.length - i > 1 ? path.slice(i).join('.') : undefined;
    if (whole !== undefined && Object.hasOwn(obj, whole)) return obj[whole];
    cur = Object.hasOwn(obj, seg) ? obj[seg] : undefined;
  }
  return cur;
}

/** Every string at path `at` under `value`, depth first in document order. */
function joinText(value: unknown, at: readonly string[], out: string[]): void {
  if (Array.isArray(value)) {
    for (const v of value) joinText(v, at, out);
    return;
  }
  if (!isObject(value)) return;
  const here = valueAt(value, at);
  if (typeof here === 'string') out.push(here);
  for (const v of Object.values(value)) if (v !== null && typeof v === 'object') joinText(v, at, out);
}

type Convert = (html: string) => string;

/**
 * The value cut down to the shape. With `keepRest`, fields the shape does not name are kept too (the caller chose
 * the provider's fields), and only the HTML of the named ones is turned into text.
 */
function project(value: unknown, shape: AnswerShape, html: Convert | undefined, keepRest = false): unknown {
  if (shape === true) return value;
  if (shape === 'html') return typeof value === 'string' && html && looksLikeHtml(value) ? html(value) : value;
  if (Array.isArray(shape)) {
    const item = shape[0] as AnswerShape;
    return Array.isArray(value) ? value.map((v) => project(v, item, html, keepRest)) : value;
  }
  if (!isObject(value)) return value;
  const out: Json = {};
  if (keepRest)
    for (const [key, v] of Object.entries(value))
      if (!Object.hasOwn(shape, key)) Object.defineProperty(out, key, { value: v, enumerable: true, writable: true });
  for (const [key, child] of Object.entries(shape as Record<string, AnswerShape>)) {
    if (isObject(child) && '$selected' in child) {
      if (keepRest && Object.hasOwn(value, key))
        Object.defineProperty(out, key, {
          value: project(value[key], (child as { $selected: AnswerShape }).$selected, html, keepRest),
          enumerable: true,
          writable: true,
        });
    } else if (isObject(child) && '$join' in child) {
      const [from, at, sep = ''] = (child as { $join: readonly [readonly string[], readonly string[], string?] }).$join;
      const parts: string[] = [];
      joinText(valueAt(value, from), at, parts);
      Object.defineProperty(out, key, { value: parts.join(sep), enumerable: true, writable: true });
    } else if (Object.hasOwn(value, key)) {
      Object.defineProperty(out, key, {
        value: project(value[key], child, html, keepRest),
        enumerable: true,
        writable: true,
      });
    }
  }
  return out;
}

const htmlShapes = new WeakMap<object, boolean>();

function hasHtml(shape: AnswerShape): boolean {
  if (shape === 'html') return true;
  if (shape === true) return false;
  const cached = htmlShapes.get(shape);
  if (cached !== undefined) return cached;
  const found = Array.isArray(shape)
    ? hasHtml(shape[0] as AnswerShape)
    : '$selected' in shape
      ? hasHtml((shape as { $selected: AnswerShape }).$selected)
      : !('$join' in shape) && Object.values(shape as Record<string, AnswerShape>).some(hasHtml);
  htmlShapes.set(shape, found);
  return found;
}

/** The concise answer: the fields the tool's shape names (or all, when the caller chose them), HTML as text. */
export async function conciseAnswer(tool: ToolDefinition, value: unknown, input: Json = {}): Promise<Json> {
  const { shape, selectedBy } = tool.output;
  const html = hasHtml(shape) ? await htmlConverter() : undefined;
  const chosen = selectedBy !== undefined && input[selectedBy] !== undefined && input[selectedBy] !== '';
  return project(asObject(value), shape, html, chosen) as Json;
}

// ---------------------------------------------------------------------------------------------------------------
// The budget

export interface Truncated {
  budget_tokens: number;
  items_returned?: number;
  items_omitted?: number;
  fields_cut?: string[];
  note: string;
}

/** The answer with `list` at `path` (the objects and lists on the way copied, so the answer is cut without a deep copy). */
function withList(answer: Json, path: readonly string[], list: unknown[]): Json {
  return replaceAt(
    answer,
    path.map((seg, i) => (Array.isArray(valueAt(answer, path.slice(0, i))) ? Number(seg) : seg)),
    () => list,
  ) as Json;
}

const jsonOf = (v: unknown) => JSON.stringify(v) ?? 'null';

/** The tokens of a value's JSON, or false when over `limit`. */
function tokensOf(counter: TokenCounter, value: unknown, limit: number): number | false {
  return counter.within(jsonOf(value), limit);
}

/** A part of an answer that can be made smaller: a list (by items) or a text (by characters), and its size. */
interface Part {
  path: Array<string | number>;
  size: number;
  kind: 'list' | 'text';
  length: number;
}

/** The largest list or text of an answer, by the bytes of its JSON (one walk, sizes summed from the leaves). */
function largestPart(value: unknown, path: Array<string | number>, best: { part?: Part }): number {
  if (typeof value === 'string') {
    const size = value.length + 2;
    if (value.length > 64 && (!best.part || size > best.part.size))
      best.part = { path: [...path], size, kind: 'text', length: value.length };
    return size;
  }
  if (Array.isArray(value)) {
    let size = 2;
    value.forEach((v, i) => (size += largestPart(v, [...path, i], best) + 1));
    if (value.length > 1 && (!best.part || size > best.part.size))
      best.part = { path: [...path], size, kind: 'list', length: value.length };
    return size;
  }
  if (isObject(value)) {
    let size = 2;
    for (const [k, v] of Object.entries(value)) size += k.length + 4 + largestPart(v, [...path, k], best);
    return size;
  }
  return jsonOf(value).length;
}

function replaceAt(value: unknown, path: ReadonlyArray<string | number>, make: (old: unknown) => unknown): unknown {
  if (!path.length) return make(value);
  const [head, ...rest] = path;
  if (Array.isArray(value)) {
    const copy = value.slice();
    copy[head as number] = replaceAt(copy[head as number], rest, make);
    return copy;
  }
  const out = { ...(value as Json) };
  Object.defineProperty(out, head as string, {
    value: replaceAt((value as Json)[head as string], rest, make),
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return out;
}

const pathText = (path: ReadonlyArray<string | number>) =>
  path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i ? `.${p}` : p)).join('');

/**
 * Makes an answer fit by cutting its largest list or text, again and again (each cut aims at the whole excess,
 * and at least halves that part), naming each in `cut`. Bounded: at most MAX_CUT_ROUNDS cuts, each one walk of an
 * answer that shrinks, and one token count bounded by the budget.
 */
function cutToFit(counter: TokenCounter, answer: Json, budget: number, cut: string[]): Json | undefined {
  let current: unknown = answer;
  for (let round = 0; round < MAX_CUT_ROUNDS; round++) {
    const tokens = tokensOf(counter, current, budget);
    if (tokens !== false) return current as Json;
    const best: { part?: Part } = {};
    const total = largestPart(current, [], best);
    const part = best.part;
    if (!part) return undefined;
    // Aim at the budget in bytes (about 3 per token for JSON), and always at least halve the part.
    const excess = Math.max(total - budget * 3, 0);
    const keepRatio = Math.min(0.5, Math.max(0, (part.size - excess) / part.size));
    if (part.kind === 'list') {
      const keep = Math.max(1, Math.floor(part.length * keepRatio));
      current = replaceAt(current, part.path, (old) => (old as unknown[]).slice(0, keep));
      cut.push(`${pathText(part.path)}: ${part.length - keep} of ${part.length} items left out`);
    } else {
      const keep = Math.floor(part.length * keepRatio);
      current = replaceAt(current, part.path, (old) => `${(old as string).slice(0, keep)} …[cut]`);
      cut.push(`${pathText(part.path)}: ${part.length - keep} of ${part.length} characters left out`);
    }
  }
  return tokensOf(counter, current, budget) === false ? undefined : (current as Json);
}

export interface ShapedAnswer {
  data: unknown;
  /** Set when the answer was cut, or the provider has another page. */
  nextCursor?: string;
  truncated?: Truncated;
}

function more(tool: ToolDefinition, raw: unknown, input: Json, returned: number): Json | undefined {
  const p = tool.output.paging;
  if (!p) return undefined;
  const next = p.next ? valueAt(asObject(raw), p.next) : undefined;
  const given = (v: unknown) => v !== undefined && v !== null && v !== '' && v !== false;
  if (p.kind === 'token') return given(next) ? { ...input, [p.param]: next } : undefined;
  const at = typeof input[p.param] === 'number' ? (input[p.param] as number) : p.kind === 'page' ? 1 : 0;
  let hasMore = given(next);
  if (!hasMore && p.total) {
    const total = valueAt(asObject(raw), p.total);
    if (typeof total === 'number') hasMore = p.kind === 'page' ? at < total : at + returned < total;
  }
  if (!hasMore) return undefined;
  if (p.kind === 'skip') return { ...input, [p.param]: at + returned };
  // A provider that hands out a token for the next page wants it beside the page's number.
  if (p.token !== undefined) return given(next) ? { ...input, [p.param]: at + 1, [p.token]: next } : undefined;
  return { ...input, [p.param]: at + 1 };
}

/** The input a cursor keeps: no secrets. */
function cursorInput(tool: ToolDefinition, input: Json): Json {
  const secret = new Set(tool.secretInputs ?? []);
  return Object.fromEntries(Object.entries(input).filter(([k]) => !secret.has(k)));
}

export interface AnswerContext {
  tool: ToolDefinition;
  /** The validated input, without the service's own parameters. */
  input: Json;
  request: AnswerRequest;
  budget: number;
  /** Whether a next input is one the tool accepts (a page past a provider's limit is not offered). */
  accepts(input: Json): boolean;
}

/**
 * The answer for the caller: concise or detailed, the part of the page a cursor asked for, within the budget, with
 * `next_cursor` when there is more (and `truncated` when something was left out to fit).
 */
export async function shapeAnswer(ctx: AnswerContext, raw: unknown): Promise<ShapedAnswer> {
  const { tool, input, request, budget } = ctx;
  const itemsPath = tool.output.items;
  let answer: unknown = request.format === 'detailed' ? raw : await conciseAnswer(tool, raw, input);
  let list = itemsPath ? valueAt(asObject(answer), itemsPath) : undefined;
  if (!Array.isArray(list)) list = undefined;
  const pageLength = (list as unknown[] | undefined)?.length ?? 0;
  if (list && request.within > 0) {
    list = (list as unknown[]).slice(request.within);
    answer = withList(asObject(answer), itemsPath!, list as unknown[]);
  }
  const returnedBefore = request.within;
  // A detailed answer that fits is the provider's, unchanged: its own paging fields say whether there is more.
  let nextInput: Json | undefined = request.format === 'detailed' ? undefined : more(tool, raw, input, pageLength);
  if (surelyWithin(jsonOf(answer), budget)) return withNext(ctx, answer, nextInput);
  const counter = await tokenCounter();
  if (tokensOf(counter, answer, budget) !== false) return withNext(ctx, answer, nextInput);

  const truncated: Truncated = { budget_tokens: budget, note: '' };
  const cut: string[] = [];
  let result: Json | undefined;
  const obj = asObject(answer);
  if (list && (list as unknown[]).length) {
    const items = list as unknown[];
    const base = withList(obj, itemsPath!, []);
    const baseTokens = tokensOf(counter, base, budget - NOTE_TOKENS);
    let kept = 0;
    if (baseTokens !== false) {
      let room = budget - NOTE_TOKENS - baseTokens;
      for (const item of items) {
        const t = tokensOf(counter, item, room);
        if (t === false) break;
        room -= t + 1;
        kept++;
      }
      // Tokens of parts need not add up exactly to the whole's: shrink until the whole fits.
      while (
        kept > 0 &&
        tokensOf(counter, withList(obj, itemsPath!, items.slice(0, kept)), budget - NOTE_TOKENS) === false
      )
        kept--;
    }
    const shown = Math.max(kept, 1);
    result = withList(obj, itemsPath!, items.slice(0, shown));
    if (kept === 0) result = cutToFit(counter, result, budget - NOTE_TOKENS, cut);
    truncated.items_returned = shown;
    truncated.items_omitted = items.length - shown;
    if (shown < items.length) {
      const p = tool.output.paging;
      nextInput =
        p?.kind === 'skip'
          ? { ...input, [p.param]: ((input[p.param] as number | undefined) ?? 0) + shown }
          : { ...input, [NEXT_WITHIN]: returnedBefore + shown };
    }
  } else {
    result = cutToFit(counter, obj, budget - NOTE_TOKENS, cut);
  }
  if (!result) {
    return {
      data: {},
      truncated: {
        budget_tokens: budget,
        note: `The answer does not fit the answer budget of ${budget} tokens even when cut; ask for less (fewer items or fields).`,
      },
    };
  }
  if (cut.length) truncated.fields_cut = cut;
  const shaped = withNext(ctx, result, nextInput);
  truncated.note = shaped.nextCursor
    ? `The answer was cut to fit ${budget} tokens: call ${tool.name} again with next_cursor for the rest.`
    : `The answer was cut to fit ${budget} tokens${cut.length ? ' (fields_cut names what was shortened)' : ''}; response_format detailed or a narrower request shows more.`;
  return { ...shaped, data: { ...(shaped.data as Json), [TRUNCATED]: truncated }, truncated };
}

/** A marker in a next input: the items of the same page already returned (the cursor's `w`). */
const NEXT_WITHIN = '\u0000within';

function withNext(ctx: AnswerContext, answer: unknown, nextInput: Json | undefined): ShapedAnswer {
  // Going on means calling the tool again: never for one that writes or runs a job.
  if (!nextInput || !ctx.tool.readOnly) return { data: answer };
  const { [NEXT_WITHIN]: within, ...input } = nextInput;
  if (within === undefined && !ctx.accepts(input)) return { data: answer };
  const nextCursor = encodeCursor({ t: ctx.tool.name, i: cursorInput(ctx.tool, input), w: (within as number) ?? 0 });
  if (!nextCursor) return { data: answer };
  return { data: { ...asObject(answer), [NEXT_CURSOR]: nextCursor }, nextCursor };
}
