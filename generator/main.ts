/**
 * `npm run generate` — reads specs/*.yaml, validates them, and writes generated/.
 * `npm run generate -- --check` — fails (exit 1) when generated/ differs from what the specs produce.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { dirname, join, relative } from 'node:path';
import * as prettier from 'prettier';
import { Project } from 'ts-morph';
import { checkConnector, exportedHooks, type CheckedTool } from './check.ts';
import { checkTriggers, type CheckedTrigger } from './triggers.ts';
import { emitConnector, emitRegistry, emitTypes, emitValidators } from './emit-code.ts';
import { emitConnectorDoc, emitIndexDoc, emitReadmeConnectors } from './emit-docs.ts';
import { emitSpecModel, SPEC_MODEL_PATH } from './emit-model.ts';
import { emitOpenApi } from './emit-openapi.ts';
import { connectorIcon } from './icon.ts';
import { emitApiQueryValidators, emitApiTypes, emitApiValidators } from './emit-api.ts';
import { AggregateSpecError, loadSpecFile, SpecError, specFiles } from './load.ts';
import type { ConnectorSpec } from '../core/spec-model.ts';

const OUT = 'generated';
const CACHE_DIR = 'node_modules/.cache/acs-generator';

/**
 * Prettier dominates generation time; its output depends only on the input text, the options and
 * prettier's version, so formatted files are cached by a hash of those (an unchanged connector is not
 * formatted again). The cache lives in node_modules/.cache and can be deleted at any time.
 */
async function formatCached(content: string, options: prettier.Options): Promise<string> {
  const key = createHash('sha256')
    .update(prettier.version)
    .update(JSON.stringify(options))
    .update(content)
    .digest('hex');
  const path = join(CACHE_DIR, `${key}.txt`);
  if (existsSync(path)) return readFileSync(path, 'utf8');
  const formatted = await prettier.format(content, options);
  try {
    mkdirSync(CACHE_DIR, { recursive: true });
    writeFileSync(path, formatted);
  } catch {
    // A read-only checkout still generates, just without the cache.
  }
  return formatted;
}

export interface GenerateResult {
  files: Map<string, string>;
  connectors: ConnectorSpec[];
  toolCount: number;
}

/** Loads, checks and emits everything in memory. Throws with every spec error found. */
export async function generate(specDir = 'specs'): Promise<GenerateResult> {
  const errors: string[] = [];
  const connectors: ConnectorSpec[] = [];
  const checked = new Map<string, CheckedTool[]>();
  const checkedTriggers = new Map<string, CheckedTrigger[]>();
  for (const file of specFiles(specDir)) {
    try {
      const loaded = loadSpecFile(file);
      checked.set(loaded.spec.name, checkConnector(loaded));
      checkedTriggers.set(loaded.spec.name, checkTriggers(loaded, exportedHooks(loaded.spec.name)));
      connectors.push(loaded.spec);
    } catch (e) {
      if (e instanceof AggregateSpecError) errors.push(...e.errors.map((x) => x.message));
      else if (e instanceof SpecError) errors.push(e.message);
      else if ((e as { specErrors?: SpecError[] }).specErrors)
        errors.push(...(e as { specErrors: SpecError[] }).specErrors.map((x) => x.message));
      else throw e;
    }
  }
  if (errors.length) throw new Error(`${errors.length} problem(s) in specs:\n${errors.join('\n')}`);

  const files = new Map<string, string>();
  const project = new Project({ useInMemoryFileSystem: true, skipAddingFilesFromTsConfig: true });
  for (const c of connectors) {
    files.set(`${OUT}/validators/${c.name}.ts`, emitValidators(c));
    files.set(
      `${OUT}/connectors/${c.name}.ts`,
      emitConnector(project, c, checked.get(c.name)!, checkedTriggers.get(c.name)).getFullText(),
    );
    files.set(`${OUT}/docs/${c.name}.md`, emitConnectorDoc(c));
    const icon = connectorIcon(c.name);
    if (icon) files.set(`${OUT}/docs/icons/${c.name}.svg`, `${icon}\n`);
  }
  files.set(`${OUT}/types.ts`, emitTypes(project, connectors).getFullText());
  files.set(`${OUT}/registry.ts`, emitRegistry(project, connectors).getFullText());
  files.set(`${OUT}/docs/index.md`, emitIndexDoc(connectors));
  files.set(`${OUT}/docs/openapi.json`, JSON.stringify(emitOpenApi(connectors), null, 2));
  files.set(`${OUT}/api/validators.ts`, emitApiValidators());
  files.set(`${OUT}/api/query-validators.ts`, emitApiQueryValidators());
  files.set(`${OUT}/api/types.ts`, await emitApiTypes());
  files.set(SPEC_MODEL_PATH, await emitSpecModel());
  files.set('README.md', emitReadmeConnectors(readFileSync('README.md', 'utf8'), connectors));

  const config = (await prettier.resolveConfig('package.json')) ?? {};
  for (const [path, content] of files) {
    if (path.endsWith('.svg')) continue;
    const parser = path.endsWith('.ts') ? 'typescript' : path.endsWith('.json') ? 'json' : 'markdown';
    files.set(path, await formatCached(content, { ...config, parser }));
  }
  return { files, connectors, toolCount: connectors.reduce((n, c) => n + c.tools.length, 0) };
}

function listFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? listFiles(p) : [p];
  });
}

async function main() {
  const check = process.argv.includes('--check');
  const started = performance.now();
  let result: GenerateResult;
  try {
    result = await generate();
  } catch (e) {
    console.error((e as Error).message);
    process.exit(1);
  }
  const existing = new Set(listFiles(OUT).map((p) => relative('.', p)));
  const changed: string[] = [];
  for (const [path, content] of result.files) {
    const onDisk = existsSync(path) ? readFileSync(path, 'utf8') : undefined;
    existing.delete(path);
    if (onDisk !== content) changed.push(path);
  }
  const stale = [...existing];
  const ms = Math.round(performance.now() - started);
  if (check) {
    if (changed.length || stale.length) {
      console.error('generated/ has drifted from specs/ — run `npm run generate` and commit the result:');
      for (const p of changed) console.error(`  changed: ${p}`);
      for (const p of stale) console.error(`  stale:   ${p}`);
      process.exit(1);
    }
    console.log(
      `generated/ is up to date (${result.connectors.length} connectors, ${result.toolCount} tools, ${ms} ms)`,
    );
    return;
  }
  for (const path of changed) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, result.files.get(path)!);
  }
  for (const path of stale) rmSync(path);
  console.log(
    `generated ${result.files.size} files for ${result.connectors.length} connectors, ${result.toolCount} tools ` +
      `(${changed.length} changed, ${stale.length} removed) in ${ms} ms`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
