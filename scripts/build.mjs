/**
 * `npm run build`: the service compiled to JavaScript under dist/ (layout and assets: see build-lib.mjs).
 * esbuild transpiles each file on its own (the sources are written for that: isolatedModules), rewriting the
 * relative `.ts` imports to `.js`; in about 2 s where tsc's emit took 14–30 s on the shared 2-core machine,
 * because tsc type-checks the whole program on every build. Type-checking stays `npm run typecheck` (CI runs it).
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DIST, ROOT, SOURCE_DIRS, STAMP, syncAssets, writeStamp } from './build-lib.mjs';

let esbuild;
try {
  esbuild = await import('esbuild');
} catch {
  process.stderr.write('npm run build: esbuild is not installed (run `npm install` with dev dependencies)\n');
  process.exit(1);
}

const started = Date.now();
const entryPoints = [];
const walk = (dir) => {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) walk(path);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) entryPoints.push(path);
  }
};
for (const dir of SOURCE_DIRS) walk(join(ROOT, dir));

rmSync(STAMP, { force: true });
try {
  await esbuild.build({
    entryPoints,
    outdir: DIST,
    outbase: ROOT,
    // "Bundle" with every import external: one output file per source file, imports kept, `.ts` made `.js`.
    bundle: true,
    plugins: [
      {
        name: 'one-file-each',
        setup(build) {
          build.onResolve({ filter: /.*/ }, (args) =>
            args.kind === 'entry-point' ? undefined : { path: args.path.replace(/\.ts$/, '.js'), external: true },
          );
        },
      },
    ],
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    logLevel: 'warning',
  });
} catch {
  process.stderr.write('npm run build: esbuild reported errors; dist/ is not usable\n');
  process.exit(1);
}
syncAssets();
writeStamp();
process.stdout.write(
  `built dist/ (${entryPoints.length} modules) in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
);
