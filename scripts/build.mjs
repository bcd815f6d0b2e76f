/**
 * `npm run build`: the service bundled to JavaScript under dist/ (layout and assets: see build-lib.mjs).
 *
 * esbuild bundles each entry point (the service, the key tool) with the packages it uses, tree-shaken and with
 * whitespace and syntax minified (identifiers are not minified, so stack traces and CPU profiles stay readable;
 * source maps beside). Code the service needs only for some requests (the dashboard, MCP, Scalekit's gRPC and REST API, tool
 * search) is reached through `import()` in the sources and so lands in chunks of its own, loaded on first use.
 * One file instead of about 1 400 (the service's 107 modules and the packages' files, each resolved, read and
 * compiled on its own) is most of what makes the start fast.
 *
 * Kept outside the bundle: better-sqlite3 (a native addon, found by its package at run time), pg (loaded only
 * for PostgreSQL), and two packages that are mostly data: iconv-lite (body-parser's charset decoder; its code
 * pages are half a megabyte that a bundle would parse at every start, though a request body in a legacy charset
 * is the only one to need them: from node_modules they load on first use) and mime-db (150 KB of JSON, parsed
 * faster as the package's JSON file than as code in the bundle). node_modules is therefore still needed at run
 * time, for those.
 *
 * Type-checking stays `npm run typecheck` (CI runs it); esbuild only strips the types.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { DIST, ROOT, STAMP, lazyListFormat, syncAssets, writeStamp } from './build-lib.mjs';

let esbuild;
try {
  esbuild = await import('esbuild');
} catch {
  process.stderr.write('npm run build: esbuild is not installed (run `npm install` with dev dependencies)\n');
  process.exit(1);
}

/** What `node dist/<entry>.js` runs. */
const ENTRY_POINTS = ['runtime/main.ts', 'runtime/cli/keys.ts'];
const EXTERNAL = ['better-sqlite3', 'pg', 'iconv-lite', 'mime-db'];
/**
 * In the bundle, `import.meta.url` is the URL of the output file, not that of the source module the code came
 * from; the service's modules use it to find their assets (migrations, views, static files, the OpenAPI
 * document), which dist/ keeps at the sources' layout. So each source's `import.meta.url` becomes the URL its
 * module would have at that layout, written relative to the output file that ends up holding it: this marker,
 * replaced once the output files' places are known.
 */
const TO_DIST = '__ACS_PATH_TO_DIST__';

const started = Date.now();
rmSync(STAMP, { force: true });
let result;
try {
  result = await esbuild.build({
    entryPoints: ENTRY_POINTS.map((e) => join(ROOT, e)),
    outdir: DIST,
    outbase: ROOT,
    bundle: true,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: EXTERNAL,
    minifyWhitespace: true,
    minifySyntax: true,
    // Off: esbuild's keepNames wraps every named function and class in a `__name()` call that runs each time one
    // is created, closures made per request included (2.7 % of the proxy's CPU in a profile). Identifiers are not
    // minified, so a function keeps its name; only a library class that esbuild renames to avoid a clash in the
    // bundle (got's RequestError becomes RequestError2) shows that name where its constructor's name is read.
    keepNames: false,
    sourcemap: true,
    legalComments: 'linked',
    // The CommonJS packages in the bundle call require() for Node's modules; an ES module has none of its own.
    banner: {
      js: "import { createRequire as __acsCreateRequire } from 'node:module';\nconst require = __acsCreateRequire(import.meta.url);",
    },
    plugins: [
      {
        // See lazyListFormat (build-lib.mjs): got's type checks build two Intl.ListFormat objects at load.
        name: 'lazy-list-format',
        setup(build) {
          build.onLoad({ filter: /[\\/]@sindresorhus[\\/]is[\\/].*\.js$/ }, async (args) => {
            const { readFile } = await import('node:fs/promises');
            const source = await readFile(args.path, 'utf8');
            const lazy = lazyListFormat(source);
            return lazy === source ? undefined : { contents: lazy, loader: 'js' };
          });
        },
      },
      {
        name: 'source-module-urls',
        setup(build) {
          build.onLoad({ filter: /\.ts$/ }, async (args) => {
            const { readFile } = await import('node:fs/promises');
            const source = await readFile(args.path, 'utf8');
            if (!source.includes('import.meta.url')) return undefined;
            const asBuilt = relative(ROOT, args.path).replace(/\.ts$/, '.js');
            return {
              contents: source.replaceAll(
                'import.meta.url',
                `new URL(${JSON.stringify(`${TO_DIST}/${asBuilt}`)}, import.meta.url).href`,
              ),
              loader: 'ts',
            };
          });
        },
      },
    ],
    write: false,
    logLevel: 'warning',
  });
} catch {
  process.stderr.write('npm run build: esbuild reported errors (above); dist/ is not usable\n');
  process.exit(1);
}

// dist/ is replaced as a whole: nothing of an earlier build (a chunk, a deleted migration) lives on in it.
rmSync(DIST, { recursive: true, force: true });
for (const file of result.outputFiles) {
  mkdirSync(dirname(file.path), { recursive: true });
  if (file.path.endsWith('.js')) {
    const toDist = relative(dirname(file.path), DIST) || '.';
    writeFileSync(file.path, file.text.replaceAll(TO_DIST, toDist));
  } else {
    writeFileSync(file.path, file.contents);
  }
}
syncAssets();
writeStamp();
const chunks = result.outputFiles.filter((f) => f.path.endsWith('.js')).length - ENTRY_POINTS.length;
process.stdout.write(
  `built dist/ (${ENTRY_POINTS.length} entry points, ${chunks} chunks) in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
);
