/**
 * Each tool's examples against the requests the tool really builds: `npm run generate` runs the request builder it
 * has just compiled (the same code it writes into generated/connectors/, with the same runtime helpers), through the
 * hook's plan when the tool has one, on each example's input (defaults applied, as the service applies them), and
 * refuses an example that says something else, naming the tool and the field of the example that is wrong.
 *
 * test/contract/golden.test.ts makes the same comparison through the generated modules and the runtime's planner.
 */
import { isDeepStrictEqual } from 'node:util';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Ajv } from 'ajv';
import { ts } from 'ts-morph';
import * as H from '../core/template-runtime.ts';
import { REDACTED, shownHeaders } from '../core/request-headers.ts';
import type { ConnectorTransforms } from '../core/transforms.ts';
import type { ToolHook, UpstreamRequest } from '../core/tool-types.ts';
import type { ConnectorSpec } from '../core/spec-model.ts';
import type { CheckedTool } from './check.ts';
import { hookFilePath } from './check.ts';
import { exampleRequestHeaders } from './emit-docs.ts';
import type { LoadedSpec, SpecError } from './load.ts';

type Build = (input: Record<string, unknown>, ctx: { base(host?: string): string }) => UpstreamRequest[];
type Path = Array<string | number>;

interface HookModule {
  transforms?: ConnectorTransforms;
  [name: string]: unknown;
}

/** The builder the generator emits for a tool, as a function: its TypeScript transpiled, run with the runtime's helpers. */
function builder(code: string, transforms: ConnectorTransforms): Build {
  const source = `function build(input: any, ctx: any) { const out: any[] = []; ${code}\nreturn out; }`;
  const js = ts.transpileModule(source, { compilerOptions: { target: ts.ScriptTarget.ES2022 } }).outputText;
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- running the builder the generator has just emitted is the point of the check
  const make = new Function('H', 'T', 'CT', 'mapValue', `${js}\nreturn build;`) as (...helpers: unknown[]) => Build;
  return make(H, H.T, transforms, H.mapValue);
}

/** The account field values the examples assume: each field's example or default, then `example_fields`. */
function exampleFields(spec: ConnectorSpec): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const a of spec.auth)
    if ('fields' in a)
      for (const f of a.fields) if ((f.example ?? f.default) !== undefined) fields[f.name] = (f.example ?? f.default)!;
  return { ...fields, ...spec.example_fields };
}

function baseOf(spec: ConnectorSpec, fields: Record<string, string>) {
  return (host?: string): string => {
    const template = host ? spec.api.hosts?.[host] : spec.api.base_url;
    if (template === undefined) throw new Error(`unknown host ${host}`);
    return template.replace(/\{([^{}]+)\}/g, (m, name: string) => fields[name] ?? m).replace(/\/+$/, '');
  };
}

/** A secret input's value shown as [REDACTED] wherever it appears, as a dry run shows it (runtime/tools/plan.ts). */
function redacted<T>(value: T, secrets: readonly string[]): T {
  const live = secrets.filter((s) => s.length >= 4);
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return live.reduce((acc, s) => acc.split(s).join(REDACTED), v);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return live.length ? (walk(value) as T) : value;
}

const show = (v: unknown) => JSON.stringify(v);

function differs(want: unknown, got: unknown, verb: string): string {
  if (want === undefined) return `is missing from the example: the request the tool builds ${verb} ${show(got)}`;
  if (got === undefined) return `says ${show(want)}, but the request the tool builds ${verb} nothing here`;
  return `says ${show(want)}, but the request the tool builds ${verb} ${show(got)}`;
}

/** The first place two JSON values differ, as a path below them, with both values there. */
function firstDifference(
  want: unknown,
  got: unknown,
  path: Path = [],
): { path: Path; want: unknown; got: unknown } | undefined {
  if (isDeepStrictEqual(want, got)) return undefined;
  const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
  if (Array.isArray(want) && Array.isArray(got) && want.length === got.length) {
    for (let i = 0; i < want.length; i++) {
      const d = firstDifference(want[i], got[i], [...path, i]);
      if (d) return d;
    }
  }
  if (isObject(want) && isObject(got)) {
    for (const k of new Set([...Object.keys(want), ...Object.keys(got)])) {
      const d = firstDifference(want[k], got[k], [...path, k]);
      if (d) return d;
    }
  }
  return { path, want, got };
}

function splitUrl(url: string): { base: string; query: string[] } {
  const q = url.indexOf('?');
  return { base: q < 0 ? url : url.slice(0, q), query: q < 0 ? [] : url.slice(q + 1).split('&') };
}

/** What is wrong with an example's URL, in words. */
function urlProblem(want: string, got: string): string {
  const w = splitUrl(want);
  const g = splitUrl(got);
  if (w.base !== g.base) return `says ${w.base}, but the request the tool builds goes to ${g.base}`;
  const missing = g.query.filter((p) => !w.query.includes(p));
  const extra = w.query.filter((p) => !g.query.includes(p));
  if (missing.length || extra.length) {
    return (
      'has a query that differs from the one the tool builds' +
      (extra.length ? `: the example has ${extra.join('&')}` : '') +
      (missing.length ? `${extra.length ? ';' : ':'} the tool sends ${missing.join('&')}` : '') +
      ` (the tool's URL: ${got})`
    );
  }
  return `lists the query parameters in another order than the tool sends them (the tool's URL: ${got})`;
}

/** The examples of one connector's tools that contradict what the tools build, as spec errors. */
export async function checkExamples(loaded: LoadedSpec, checked: readonly CheckedTool[]): Promise<SpecError[]> {
  const { spec } = loaded;
  const errors: SpecError[] = [];
  const hookPath = resolve(hookFilePath(spec.name));
  const hooks: HookModule = existsSync(hookPath) ? ((await import(pathToFileURL(hookPath).href)) as HookModule) : {};
  const fields = exampleFields(spec);
  const base = baseOf(spec, fields);
  const auth = spec.auth[0]!;
  const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false });

  for (const { tool, buildCode, schema } of checked) {
    const index = spec.tools.indexOf(tool);
    const validate = ajv.compile(schema);
    const build = builder(buildCode, hooks.transforms ?? {});
    const hook = tool.hook ? (hooks[tool.hook] as ToolHook<Record<string, unknown>> | undefined) : undefined;
    tool.examples.forEach((example, i) => {
      const at = (path: Path, problem: string) =>
        errors.push(loaded.error(['tools', index, 'examples', i, ...path], problem));
      const input = structuredClone(example.input) as Record<string, unknown>;
      validate(input); // applies the defaults; the example's validity is checked with the tool (generator/check.ts)
      let planned: UpstreamRequest[];
      try {
        const built = build(input, { base });
        planned = hook?.plan ? hook.plan(input, built, base) : built;
      } catch (e) {
        at(['input'], `makes the tool refuse to build its request: ${(e as Error).message}`);
        return;
      }
      if (planned.length !== example.requests.length) {
        const list = planned.map((r) => `${r.method} ${r.url}`).join(', ') || 'none';
        at(
          ['requests'],
          `lists ${example.requests.length} request(s), but the tool builds ${planned.length} for this input: ${list}`,
        );
        return;
      }
      const secrets = Object.entries(tool.input)
        .filter(([, p]) => p.secret)
        .map(([name]) => input[name])
        .filter((v): v is string => typeof v === 'string');
      planned.forEach((r, j) => {
        const want = example.requests[j]!;
        if (want.method.toUpperCase() !== r.method.toUpperCase()) {
          at(['requests', j, 'method'], `says ${want.method}, but the request the tool builds is a ${r.method}`);
        }
        const url = redacted(r.url, secrets);
        if (want.url !== url) at(['requests', j, 'url'], urlProblem(want.url, url));
        const body = firstDifference(want.body, redacted(r.body, secrets));
        if (body) {
          at(['requests', j, 'body', ...body.path], differs(body.want, body.got, 'has'));
        }
        const wantHeaders = exampleRequestHeaders(spec, tool, want);
        const gotHeaders = redacted(shownHeaders(spec, auth.apply, r), secrets);
        const header = firstDifference(wantHeaders, gotHeaders);
        if (header) {
          at(['requests', j, 'headers', ...header.path], differs(header.want, header.got, 'sends'));
        }
      });
    });
  }
  return errors;
}
