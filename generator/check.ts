import { existsSync, readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { Node, Project } from 'ts-morph';
import type { LoadedSpec } from './load.ts';
import { SpecError } from './load.ts';
import type { ToolSpec } from '../core/spec-model.ts';
import { mustBeType } from '../core/errors.ts';
import { compileRequests, type Fail } from './compile.ts';
import { compileRules } from './rules.ts';
import { toolInputSchema, toolParams } from './schema.ts';
import { answerParams, compileOutput, type CompiledOutput } from './output.ts';
import { checkedGuidance } from './guidance.ts';

export interface CheckedTool {
  tool: ToolSpec;
  buildCode: string;
  rulesCode: string;
  schema: Record<string, unknown>;
  messages: Record<string, string>;
  output: CompiledOutput;
  /** When to use the tool, what it changes, what it costs (generator/guidance.ts). */
  guidance: string;
}

interface HookFile {
  /** Exported functions and `export const` names. */
  exports: Set<string>;
  /** The property names of `export const transforms = { ... }`: the connector's own transforms. */
  transforms: Set<string>;
}

const hookFiles = new Map<string, HookFile>();

/** The hook file of a connector, `specs/hooks/<connector>.ts`: the connector's own code, beside its YAML. */
export function hookFilePath(connector: string): string {
  return `specs/hooks/${connector}.ts`;
}

export function hookFile(connector: string): HookFile {
  let found = hookFiles.get(connector);
  if (!found) {
    found = { exports: new Set(), transforms: new Set() };
    const path = hookFilePath(connector);
    if (existsSync(path)) {
      // Syntactic only: exported functions and `export const` declarations. Asking for the exported symbols
      // would build a type checker over the hook's whole import graph.
      const project = new Project({ useInMemoryFileSystem: true });
      const file = project.createSourceFile(path, readFileSync(path, 'utf8'));
      for (const f of file.getFunctions()) if (f.isExported() && f.getName()) found.exports.add(f.getName()!);
      for (const v of file.getVariableStatements()) {
        if (!v.isExported()) continue;
        for (const d of v.getDeclarations()) {
          found.exports.add(d.getName());
          if (d.getName() !== 'transforms') continue;
          let init = d.getInitializer();
          while (init && (Node.isSatisfiesExpression(init) || Node.isAsExpression(init))) init = init.getExpression();
          if (Node.isObjectLiteralExpression(init))
            for (const p of init.getProperties())
              if (Node.isPropertyAssignment(p) || Node.isMethodDeclaration(p)) found.transforms.add(p.getName());
        }
      }
    }
    hookFiles.set(connector, found);
  }
  return found;
}

/** The names a connector's hook file exports (its hooks, for tools and triggers). */
export function exportedHooks(connector: string): Set<string> {
  return hookFile(connector).exports;
}

/** Semantic checks the meta-schema cannot make, and compilation of every tool. Throws all errors at once. */
export function checkConnector(loaded: LoadedSpec): CheckedTool[] {
  const { spec } = loaded;
  const errors: SpecError[] = [];
  const out: CheckedTool[] = [];
  const seen = new Set<string>();
  const hosts = Object.keys(spec.api.hosts ?? {});
  const transport = spec.api.transport ?? 'rest';
  const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: true, strictTypes: false });

  const kinds = spec.auth.map((a) => a.kind);
  if (new Set(kinds).size !== kinds.length) errors.push(loaded.error(['auth'], 'each auth kind may appear once'));
  if (spec.tools.some((t) => t.versioned) && !spec.versions) {
    errors.push(loaded.error(['versions'], 'is required when a tool is versioned'));
  }
  if (spec.versions) {
    for (const k of ['schema', 'tool'] as const) {
      if (!spec.versions[k].available.includes(spec.versions[k].default)) {
        errors.push(loaded.error(['versions', k, 'default'], 'must be one of the available versions'));
      }
    }
  }

  // A tool's scopes are those its OAuth auth offers: a typo would ask the provider for a scope that does not exist.
  const oauth2 = spec.auth.find((a) => a.kind === 'oauth2');
  const offered = new Set(oauth2?.kind === 'oauth2' ? (oauth2.scopes.available ?? []).map((a) => a.name) : []);
  spec.tools.forEach((tool, index) => {
    (tool.scopes ?? []).forEach((scope, i) => {
      if (!oauth2)
        errors.push(loaded.error(['tools', index, 'scopes'], 'only a connector with oauth2 auth declares scopes'));
      else if (!offered.has(scope))
        errors.push(
          loaded.error(['tools', index, 'scopes', i], `"${scope}" is not among the oauth2 auth's scopes.available`),
        );
    });
  });

  spec.tools.forEach((tool, index) => {
    const base: Array<string | number> = ['tools', index];
    const fail: Fail = (path, problem) => {
      throw loaded.error([...base, ...path], problem);
    };
    try {
      if (!tool.name.startsWith(`${spec.name}_`)) fail(['name'], `must start with "${spec.name}_"`);
      if (seen.has(tool.name)) fail(['name'], 'is a duplicate tool name');
      seen.add(tool.name);
      if (tool.title.trim().toLowerCase().replace(/\s+/g, '_') === tool.name) {
        fail(['title'], 'must say in words what the tool does ("List mail messages"), not repeat its name');
      }
      const requests = tool.request ? [tool.request] : (tool.requests ?? []);
      if (tool.annotations.readOnlyHint && tool.annotations.destructiveHint) {
        fail(['annotations', 'destructiveHint'], 'must be false for a read-only tool (readOnlyHint: true)');
      }
      if (tool.annotations.readOnlyHint && requests.some((r) => r.method === 'DELETE')) {
        fail(['annotations', 'readOnlyHint'], 'must be false for a tool that sends a DELETE');
      }
      if (requests.some((r) => r.method === 'DELETE') && !tool.annotations.destructiveHint) {
        fail(['annotations', 'destructiveHint'], 'must be true for a tool that sends a DELETE');
      }
      (tool.warnings ?? []).forEach((w, i) => {
        if (!(w.when in tool.input)) fail(['warnings', i, 'when'], `"${w.when}" is not an input parameter of the tool`);
      });
      for (const [name, p] of Object.entries(tool.input)) {
        if (tool.versioned && (name === 'schema_version' || name === 'tool_version')) {
          fail(['input', name], 'is added by `versioned: true`; do not declare it');
        }
        if (name in answerParams(tool))
          fail(['input', name], 'is added to every tool by the service; do not declare it');
        if (p.default !== undefined && p.required)
          fail(['input', name, 'default'], 'a required parameter has no default');
        if (p.csv && p.type !== 'string') fail(['input', name, 'csv'], 'csv applies to string parameters');
        if (p.json && p.type !== 'string') fail(['input', name, 'json'], 'json applies to string parameters');
        if (p.minProperties !== undefined && p.type !== 'object') {
          fail(['input', name, 'minProperties'], 'minProperties applies to object parameters');
        }
        if (p.enum && p.default !== undefined && !p.enum.includes(p.default as never)) {
          fail(['input', name, 'default'], 'must be one of the enum values');
        }
        if (p.pattern) {
          try {
            new RegExp(p.pattern, 'u');
          } catch (e) {
            fail(['input', name, 'pattern'], `is not a valid regular expression: ${(e as Error).message}`);
          }
        }
      }
      const params = toolParams(spec, tool);
      const build = compileRequests(tool, params, fail, {
        transport,
        hosts,
        transforms: hookFile(spec.name).transforms,
      });
      const rules = compileRules(params, tool.rules ?? [], fail, build.headerParams);
      if (tool.hook && (tool.hook === 'transforms' || !hookFile(spec.name).exports.has(tool.hook))) {
        fail(['hook'], `specs/hooks/${spec.name}.ts exports no "${tool.hook}"`);
      }
      const refused = new Set((tool.rules ?? []).flatMap((r) => ('unsupported' in r ? r.unsupported : [])));
      for (const name of refused) {
        if (build.used.has(name))
          fail(['input', name], 'is refused by an `unsupported` rule, so the request may not use it');
        if (tool.input[name]?.required)
          fail(['input', name], 'is required, so an `unsupported` rule would refuse every call');
      }
      if (!tool.hook) {
        for (const name of Object.keys(tool.input)) {
          if (!build.used.has(name) && !refused.has(name) && !tool.warnings?.some((w) => w.when === name)) {
            fail(
              ['input', name],
              'is never used by the request; map it, refuse it with an `unsupported` rule, or name a hook that uses it',
            );
          }
        }
      }
      const output = compileOutput(tool, params, fail);
      const { schema, messages } = toolInputSchema(spec, tool);
      const validate = ajv.compile(schema);
      tool.examples.forEach((example, i) => {
        if (!example.requests.length && !tool.hook) fail(['examples', i, 'requests'], 'must list at least one request');
        const input = structuredClone(example.input);
        if (!validate(input)) {
          const e = validate.errors![0]!;
          const problem = e.keyword === 'type' ? mustBeType(e.params.type) : e.message;
          fail(['examples', i, 'input'], `does not validate: ${e.instancePath || '(root)'} ${problem}`);
        }
      });
      const guidance = checkedGuidance(spec, tool, fail);
      out.push({ tool, buildCode: build.code, rulesCode: rules.code, schema, messages, output, guidance });
    } catch (e) {
      if (e instanceof SpecError) errors.push(e);
      else throw e;
    }
  });
  if (errors.length) {
    const err = new Error(errors.map((e) => e.message).join('\n')) as Error & { specErrors: SpecError[] };
    err.specErrors = errors;
    throw err;
  }
  return out;
}
