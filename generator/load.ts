import { readFileSync, readdirSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { isMap, isSeq, LineCounter, parseDocument, type Document } from 'yaml';
import type { ConnectorSpec } from '../core/spec-model.ts';
import { mustBeType } from '../core/errors.ts';
import { resolveAnnotations } from './annotations.ts';

/** A problem in a connector spec, located by file, line, tool and field. */
export class SpecError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly column: number,
    readonly tool: string | undefined,
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${file}:${line}:${column}: ${tool ? `tool ${tool}, ` : ''}field ${field || '(root)'}: ${problem}`);
  }
}

export interface LoadedSpec {
  file: string;
  spec: ConnectorSpec;
  /** Locates a path inside the document, for semantic errors found after parsing. */
  locate(path: Array<string | number>): { line: number; column: number };
  error(path: Array<string | number>, problem: string): SpecError;
}

const metaSchemaPath = new URL('../specs/connector.schema.json', import.meta.url);
let metaValidator: ReturnType<Ajv['compile']> | undefined;

function metaSchemaValidator() {
  if (!metaValidator) {
    const ajv = new Ajv({ allErrors: true, strict: false });
    metaValidator = ajv.compile(JSON.parse(readFileSync(metaSchemaPath, 'utf8')));
  }
  return metaValidator;
}

function fieldName(path: Array<string | number>): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out ? `.${seg}` : seg;
  }
  return out;
}

/** The tool a path points into, so errors can name it. */
function toolAt(spec: unknown, path: Array<string | number>): string | undefined {
  if (path[0] !== 'tools' || typeof path[1] !== 'number') return undefined;
  const tools = (spec as { tools?: Array<{ name?: unknown }> })?.tools;
  const name = tools?.[path[1]]?.name;
  return typeof name === 'string' ? name : `#${path[1]}`;
}

function pathFromPointer(pointer: string): Array<string | number> {
  if (!pointer) return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

function valueAt(doc: unknown, path: Array<string | number>): unknown {
  let cur = doc;
  for (const seg of path) cur = cur && typeof cur === 'object' ? (cur as Record<string, unknown>)[seg] : undefined;
  return cur;
}

function describeAjvError(err: ErrorObject, spec: unknown): { path: Array<string | number>; problem: string } {
  const path = pathFromPointer(err.instancePath);
  switch (err.keyword) {
    case 'required':
      return { path: [...path, err.params.missingProperty as string], problem: 'is required' };
    case 'additionalProperties': {
      const key = String(err.params.additionalProperty);
      const parent = valueAt(spec, path) as Record<string, unknown>;
      // `{ description: Results, sorted by date }` is YAML for a description "Results" and a key
      // "sorted by date" with no value: a field name has no space, and a real field has a value.
      const restOfText = /\s/.test(key) || parent[key] === null;
      if (!restOfText)
        return {
          path: [...path, key],
          problem: 'is not a known field here (check the spelling against specs/connector.schema.json)',
        };
      const keys = Object.keys(parent);
      const before = keys[keys.indexOf(key) - 1];
      const cut = before !== undefined && typeof parent[before] === 'string' ? parent[before] : undefined;
      return {
        path: [...path, key],
        problem:
          'is not a known field here: it looks like the rest of a text value cut at a comma (in a one-line ' +
          `{ ... } mapping a comma ends a value); quote the text` +
          (cut !== undefined ? `: ${before}: ${JSON.stringify(`${cut}, ${key}`)}` : ''),
      };
    }
    case 'enum':
      return { path, problem: `must be one of: ${(err.params.allowedValues as unknown[]).join(', ')}` };
    case 'type':
      return { path, problem: mustBeType(err.params.type) };
    case 'propertyNames':
      return { path: [...path, err.params.propertyName as string], problem: 'is not a valid name' };
    default:
      return { path, problem: err.message ?? 'is invalid' };
  }
}

/** Ajv reports every branch of an anyOf/if-then; keep the most specific errors. */
function relevantErrors(errors: ErrorObject[]): ErrorObject[] {
  const noisy = new Set(['if', 'anyOf', 'oneOf']);
  const specific = errors.filter((e) => !noisy.has(e.keyword));
  const byPath = new Map<string, ErrorObject>();
  for (const e of specific.length ? specific : errors) {
    const key = `${e.instancePath}|${e.keyword}|${JSON.stringify(e.params)}`;
    if (!byPath.has(key)) byPath.set(key, e);
  }
  return [...byPath.values()];
}

export function loadSpecFile(file: string, cwd = process.cwd()): LoadedSpec {
  const text = readFileSync(file, 'utf8');
  const shown = relative(cwd, file) || file;
  const lineCounter = new LineCounter();
  const doc: Document = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length) {
    const e = doc.errors[0]!;
    const pos = lineCounter.linePos(e.pos[0]);
    throw new SpecError(shown, pos.line, pos.col, undefined, '', `YAML syntax: ${e.message.split('\n')[0]}`);
  }
  const spec = doc.toJS({ maxAliasCount: 100 }) as ConnectorSpec;

  const locate = (path: Array<string | number>) => {
    // Walk down as far as the path exists, so a missing field points at its parent.
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn(path.slice(0, n), true) as { range?: [number, number, number] } | undefined;
      if (node && node.range) {
        const pos = lineCounter.linePos(node.range[0]);
        return { line: pos.line, column: pos.col };
      }
      if (n > 0) {
        // Keys of maps carry their own range.
        const parent = n > 1 ? doc.getIn(path.slice(0, n - 1), true) : doc.contents;
        if (isMap(parent)) {
          const pair = parent.items.find((p) => (p.key as { value?: unknown })?.value === path[n - 1]);
          const key = pair?.key as { range?: [number, number, number] } | undefined;
          if (key?.range) {
            const pos = lineCounter.linePos(key.range[0]);
            return { line: pos.line, column: pos.col };
          }
        } else if (isSeq(parent)) {
          continue;
        }
      }
    }
    return { line: 1, column: 1 };
  };
  const error = (path: Array<string | number>, problem: string) => {
    const { line, column } = locate(path);
    const tool = toolAt(spec, path);
    const field = fieldName(path[0] === 'tools' ? path.slice(2) : path);
    return new SpecError(shown, line, column, tool, field, problem);
  };

  const validate = metaSchemaValidator();
  if (!validate(spec)) {
    const errors = relevantErrors(validate.errors ?? []).map((e) => {
      const { path, problem } = describeAjvError(e, spec);
      return error(path, problem);
    });
    throw new AggregateSpecError(errors);
  }
  const expectedName = basename(file).replace(/\.ya?ml$/, '');
  if (spec.name !== expectedName) {
    throw error(['name'], `must match the file name (${expectedName})`);
  }
  // The annotations the YAML leaves out, defaulted from the methods (generator/annotations.ts): from here on every
  // tool has all four.
  const missing: SpecError[] = [];
  spec.tools.forEach((tool, i) => {
    tool.annotations = resolveAnnotations(tool, spec.api.transport ?? 'rest', (flag, problem) =>
      missing.push(error(['tools', i, 'annotations', flag], problem)),
    );
  });
  if (missing.length) throw new AggregateSpecError(missing);
  return { file: shown, spec, locate, error };
}

export class AggregateSpecError extends Error {
  constructor(readonly errors: SpecError[]) {
    super(errors.map((e) => e.message).join('\n'));
  }
}

export function specFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()
    .map((f) => join(dir, f));
}
