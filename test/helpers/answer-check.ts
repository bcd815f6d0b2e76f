/**
 * Checks every answer a connector's end-to-end tests get from the service against the tool's declared output
 * (issue 40), and measures it. Each call of the connector's tests asks for the detailed answer; the log then checks:
 *
 * - the detailed answer is the provider's answer unchanged (for a tool without a hook, what the fake provider sent,
 *   as the executor received it), unless the answer budget cut it;
 * - the detailed and the concise answer both conform to the tool's output schema (the golden check of the schema
 *   against the fake's real wire format);
 * - the concise answer has every field the tool's shape names that the provider's answer has (what the description
 *   and the output schema promise), and fits the answer budget;
 *
 * and records the answer's size in tokens before (the provider's answer) and after (the concise answer). With
 * ANSWER_SIZES_DIR set, the sizes are written there per connector for `bench/answers.ts` to sum up.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { expect } from 'vitest';
import { tools } from '../../generated/registry.ts';
import type { AnswerShape, ToolDefinition, UpstreamResponse } from '../../core/tool-types.ts';
import { asObject, shapeAnswer } from '../../runtime/tools/answer.ts';
import type { Harness } from './harness.ts';

const ajv = new Ajv({ allErrors: true, strict: false });
const validators = new Map<string, ValidateFunction>();

function validatorOf(tool: ToolDefinition): ValidateFunction {
  let v = validators.get(tool.name);
  if (!v) validators.set(tool.name, (v = ajv.compile(tool.outputSchema)));
  return v;
}

export function expectConforms(tool: ToolDefinition, data: unknown, what: string): void {
  const validate = validatorOf(tool);
  const ok = validate(asObject(data));
  expect(ok, `${tool.name}: the ${what} answer breaks the output schema: ${ajv.errorsText(validate.errors)}`).toBe(
    true,
  );
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Every field the shape names that the provider's answer has is in the concise answer (lists item by item, as far
 * as the concise list goes: the budget may have cut it).
 */
export function missingFields(shape: AnswerShape, provider: unknown, concise: unknown, path = ''): string[] {
  if (shape === true || shape === 'html') return [];
  if (Array.isArray(shape)) {
    if (!Array.isArray(provider) || !Array.isArray(concise)) return [];
    return concise.flatMap((c, i) => missingFields(shape[0] as AnswerShape, provider[i], c, `${path}[${i}]`));
  }
  if ('$join' in shape || !isObject(provider) || !isObject(concise)) return [];
  const out: string[] = [];
  for (const [key, child] of Object.entries(shape as Record<string, AnswerShape>)) {
    const where = path ? `${path}.${key}` : key;
    if (isObject(child) && '$join' in child) {
      if (!(key in concise)) out.push(where);
      continue;
    }
    if (isObject(child) && '$selected' in child) continue;
    if (!Object.hasOwn(provider, key)) continue;
    if (!Object.hasOwn(concise, key)) out.push(where);
    else out.push(...missingFields(child, provider[key], concise[key], where));
  }
  return out;
}

const tokensOf = (v: unknown) => countTokens(JSON.stringify(v) ?? 'null', { disallowedSpecial: new Set() });

export interface AnswerSize {
  tool: string;
  /** Tokens of the provider's answer (for a hook tool, of the hook's answer). */
  before: number;
  /** Tokens of the concise answer. */
  after: number;
}

export const ANSWER_BUDGET = 8000;

export class AnswerLog {
  readonly sizes: AnswerSize[] = [];
  readonly checked = new Set<string>();
  private received: unknown[] = [];
  private tapped = false;

  constructor(
    readonly connector: string,
    private readonly harness: () => Harness,
  ) {}

  /** Records what the executor receives from the provider (once per harness). */
  private tap(): void {
    if (this.tapped) return;
    this.tapped = true;
    const executor = this.harness().running.services.executor;
    const send = executor.sendOne.bind(executor);
    executor.sendOne = async (...args: Parameters<typeof send>): Promise<UpstreamResponse> => {
      const res = await send(...args);
      this.received.push(res.status >= 200 && res.status < 300 ? { body: res.body } : { refused: res.status });
      return res;
    };
  }

  /** Starts a call: what the provider sends from now on belongs to it. */
  begin(): void {
    this.tap();
    this.received = [];
  }

  /** Checks the detailed answer of a call that `begin` started, and records its sizes. */
  async check(toolName: string, input: Record<string, unknown>, detailed: unknown): Promise<void> {
    const tool = tools.get(toolName)!;
    const { response_format: _format, next_cursor: _cursor, ...plain } = input;
    const cut = isObject(detailed) && 'truncated' in detailed;
    expectConforms(tool, detailed, 'detailed');
    let provider: unknown = detailed;
    const [only] = this.received as Array<{ body?: unknown; refused?: number }>;
    // One request, answered 2xx: the answer is the provider's (a status the tool declares empty is not).
    if (!tool.hook && this.received.length === 1 && only && 'body' in only) {
      provider = only.body ?? null;
      if (!cut) expect(detailed, `${tool.name}: the detailed answer is the provider's, unchanged`).toEqual(provider);
    }
    const concise = (
      await shapeAnswer(
        { tool, input: plain, request: { format: 'concise', within: 0 }, budget: ANSWER_BUDGET, accepts: () => true },
        provider,
      )
    ).data;
    expectConforms(tool, concise, 'concise');
    expect(
      missingFields(tool.output.shape, asObject(provider), concise),
      `${tool.name}: fields the concise answer lost`,
    ).toEqual([]);
    const after = tokensOf(concise);
    expect(after, `${tool.name}: the concise answer is over the budget`).toBeLessThanOrEqual(ANSWER_BUDGET);
    this.sizes.push({ tool: tool.name, before: tokensOf(provider), after });
    this.checked.add(tool.name);
  }

  /** Writes the sizes for `bench/answers.ts` when ANSWER_SIZES_DIR is set. */
  write(): void {
    const dir = process.env.ANSWER_SIZES_DIR;
    if (!dir) return;
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${this.connector}.json`), JSON.stringify(this.sizes));
  }
}
