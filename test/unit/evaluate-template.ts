/**
 * Compiles a request template, transpiles the expression and evaluates it against the same runtime helpers
 * the generated builders use.
 */
import ts from 'typescript';
import { compileTemplate } from '../../generator/compile.ts';
import type { ParamSpec } from '../../core/spec-model.ts';
import * as H from '../../core/template-runtime.ts';

export function evaluateTemplate(
  template: unknown,
  params: Record<string, ParamSpec>,
  input: Record<string, unknown>,
): unknown {
  const fail = (path: Array<string | number>, problem: string): never => {
    throw new Error(`${path.join('.')}: ${problem}`);
  };
  const compiled = compileTemplate(template, { params, items: [], used: new Set(), fail }, []);
  const js = ts.transpile(`(${compiled.code})`, { target: ts.ScriptTarget.ES2022 });
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- running the generator's emitted expression is what this helper is for
  return new Function('H', 'T', 'mapValue', 'input', `return ${js}`)(H, H.T, H.mapValue, input);
}
