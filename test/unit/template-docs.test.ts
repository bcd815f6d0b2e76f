/**
 * docs/templates.md documents every operator, modifier, pipe step, transform and condition the generator
 * accepts, and each example on it gives what it says it gives.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { MODIFIERS, OPERATORS, PIPE_STEPS } from '../../generator/compile.ts';
import { transformNames } from '../../core/transforms.ts';
import type { ParamSpec, ParamType } from '../../core/spec-model.ts';
import { evaluateTemplate } from './evaluate-template.ts';

interface Example {
  template: unknown;
  params?: Record<string, ParamType>;
  input: Record<string, unknown>;
  gives?: unknown;
  absent?: boolean;
}

/** Section (## heading) → item (### `name` heading) → the YAML examples under it. */
function documented(markdown: string): Map<string, Map<string, Example[]>> {
  const sections = new Map<string, Map<string, Example[]>>();
  let items: Map<string, Example[]> | undefined;
  let examples: Example[] | undefined;
  let block: string[] | undefined;
  for (const line of markdown.split('\n')) {
    if (block) {
      if (line === '```') {
        examples?.push(parse(block.join('\n')) as Example);
        block = undefined;
      } else block.push(line);
    } else if (line.startsWith('## ')) {
      items = new Map();
      examples = undefined;
      sections.set(line.slice(3).trim(), items);
    } else if (line.startsWith('### ')) {
      const name = /^### `([^`]+)`$/.exec(line)?.[1];
      if (!name || !items) throw new Error(`an item heading names one thing in backticks: ${line}`);
      examples = [];
      items.set(name, examples);
    } else if (line === '```yaml') block = [];
  }
  return sections;
}

const sections = documented(readFileSync('docs/templates.md', 'utf8'));
const metaSchema = JSON.parse(readFileSync('specs/connector.schema.json', 'utf8'));
const conditionKeys: string[] = metaSchema.definitions.condition.anyOf
  .filter((b: { required?: string[] }) => b.required)
  .map((b: { required: string[] }) => b.required[0]);

const accepted: Record<string, readonly string[]> = {
  Operators: OPERATORS,
  Modifiers: MODIFIERS,
  'Pipe steps with an argument': PIPE_STEPS,
  Transforms: transformNames,
  Conditions: conditionKeys,
};

function typeOf(v: unknown): ParamType {
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v as ParamType;
}

describe('docs/templates.md', () => {
  for (const [section, names] of Object.entries(accepted)) {
    it(`documents exactly what the generator accepts: ${section}`, () => {
      expect([...(sections.get(section)?.keys() ?? [])].sort()).toEqual([...names].sort());
    });
  }

  for (const [section, items] of sections) {
    for (const [name, examples] of items) {
      it(`${section} ${name}: has an example, and every example gives what it says`, () => {
        expect(examples.length).toBeGreaterThan(0);
        for (const ex of examples) {
          const params: Record<string, ParamSpec> = {};
          for (const [k, v] of Object.entries(ex.input)) params[k] = { type: typeOf(v) };
          for (const [k, type] of Object.entries(ex.params ?? {})) params[k] = { type };
          const result = evaluateTemplate(ex.template, params, ex.input);
          if (ex.absent) expect(result, JSON.stringify(ex.template)).toBeUndefined();
          else expect(result, JSON.stringify(ex.template)).toEqual(ex.gives);
        }
      });
    }
  }
});
