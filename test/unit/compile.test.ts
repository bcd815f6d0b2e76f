/**
 * Request templates compile to TypeScript expressions; these tests compile a template, transpile the
 * expression and evaluate it against the same runtime helpers the generated builders use.
 */
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { compileTemplate } from '../../generator/compile.ts';
import type { ParamSpec } from '../../core/spec-model.ts';
import * as H from '../../core/template-runtime.ts';

function evaluate(template: unknown, params: Record<string, ParamSpec>, input: Record<string, unknown>): unknown {
  const fail = (path: Array<string | number>, problem: string): never => {
    throw new Error(`${path.join('.')}: ${problem}`);
  };
  const compiled = compileTemplate(template, { params, items: [], used: new Set(), fail }, []);
  const js = ts.transpile(`(${compiled.code})`, { target: ts.ScriptTarget.ES2022 });
  return new Function('H', 'T', 'mapValue', 'input', `return ${js}`)(H, H.T, H.mapValue, input);
}

describe('$each', () => {
  it('maps each element to an object template (not read as a function body)', () => {
    const params: Record<string, ParamSpec> = { to: { type: 'array', items: { type: 'string' } } };
    const template = { $in: 'to', $each: { emailAddress: { address: { $item: true } }, type: 'required' } };
    expect(evaluate(template, params, { to: ['a@x.com', 'b@x.com'] })).toEqual([
      { emailAddress: { address: 'a@x.com' }, type: 'required' },
      { emailAddress: { address: 'b@x.com' }, type: 'required' },
    ]);
    expect(evaluate({ list: template }, params, {})).toBeUndefined();
  });

  it('concatenates several piped and mapped lists, leaving out the absent ones', () => {
    const params: Record<string, ParamSpec> = { req: { type: 'string' }, opt: { type: 'string' } };
    const template = {
      $concat: [
        { $in: 'req', $pipe: ['list'], $each: { address: { $item: true }, type: 'required' } },
        { $in: 'opt', $pipe: ['list'], $each: { address: { $item: true }, type: 'optional' } },
      ],
    };
    expect(evaluate(template, params, { req: '["a@x.com"]', opt: 'b@x.com, c@x.com' })).toEqual([
      { address: 'a@x.com', type: 'required' },
      { address: 'b@x.com', type: 'optional' },
      { address: 'c@x.com', type: 'optional' },
    ]);
    expect(evaluate(template, params, { opt: 'b@x.com' })).toEqual([{ address: 'b@x.com', type: 'optional' }]);
    expect(evaluate({ attendees: template }, params, {})).toBeUndefined();
  });
});
