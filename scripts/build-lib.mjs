/**
 * What `npm run build` builds and where: the service's TypeScript (core/, generated/, runtime/, specs/hooks/)
 * bundled under dist/ (dist/runtime/main.js, dist/runtime/cli/keys.js, shared and lazily loaded code in
 * dist/chunks/), and every other file of those folders (dashboard views and static files, SQL migrations, the
 * generated OpenAPI document) copied at the sources' layout, where the bundled modules look for them (see
 * build.mjs on `import.meta.url`). Plain JavaScript: it runs before anything
 * is compiled, and without tsx.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const DIST = join(ROOT, 'dist');
export const SOURCE_DIRS = ['core', 'generated', 'runtime', 'specs/hooks'];
/**
 * Files whose change makes the build stale besides those of SOURCE_DIRS: the build itself, and the installed
 * packages (bundled into dist/; `npm install` rewrites node_modules/.package-lock.json).
 */
const CONFIG_FILES = [
  'package.json',
  'package-lock.json',
  'node_modules/.package-lock.json',
  'scripts/build.mjs',
  'scripts/build-lib.mjs',
];
/** Written last by a successful build; its time is the build's. */
export const STAMP = join(DIST, '.build-stamp');

function* walk(dir) {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path);
    else if (entry.isFile()) yield path;
  }
}

function sourceFiles() {
  const files = SOURCE_DIRS.flatMap((d) => [...walk(join(ROOT, d))]);
  return [...files, ...CONFIG_FILES.map((f) => join(ROOT, f)).filter((f) => existsSync(f))];
}

/** Why dist/ must be (re)built, or undefined when it is up to date. */
export function staleReason() {
  if (!existsSync(STAMP)) return 'dist/ has no complete build';
  const built = statSync(STAMP).mtimeMs;
  for (const file of sourceFiles()) {
    if (statSync(file).mtimeMs > built) return `${relative(ROOT, file)} changed since the last build`;
  }
  return undefined;
}

/** Copies the non-TypeScript files of the sources into dist/ (the build starts from an empty dist/). */
export function syncAssets() {
  for (const dir of SOURCE_DIRS) {
    for (const file of walk(join(ROOT, dir))) {
      if (file.endsWith('.ts')) continue;
      const target = join(DIST, relative(ROOT, file));
      mkdirSync(dirname(target), { recursive: true });
      copyFileSync(file, target);
    }
  }
}

export function writeStamp() {
  writeFileSync(STAMP, `${new Date().toISOString()}\n`);
}

/**
 * A module's top-level `const x = new Intl.ListFormat(…);` made lazy: `x` becomes an object whose `format` builds
 * the formatter on its first call. @sindresorhus/is (got's type checks) builds two at load, for the text of one
 * kind of TypeError; building the first Intl.ListFormat of a process makes V8 look up the list formats of every
 * locale in ICU's data: about 15 ms of CPU at every start and 4 MB of ICU's data paged in, resident for good
 * (found with `perf record -e page-faults -d`). The bundle gets the lazy form.
 * Returns the source unchanged when it has no such line.
 */
export function lazyListFormat(source) {
  return source.replace(
    /^const (\w+) = (new Intl\.ListFormat\([^;]*\));$/gm,
    (_, name, make) => `let ${name}_; const ${name} = { format: (list) => (${name}_ ??= ${make}).format(list) };`,
  );
}
