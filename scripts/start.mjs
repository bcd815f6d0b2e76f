/**
 * `npm start`: the compiled service (dist/runtime/main.js), built first when dist/ is missing or older than the
 * sources, so `npm install && npm start` works from a fresh clone. A failed build stops here with a non-zero exit
 * (its errors shown), never running the previous build. The service runs in this very process.
 * `node scripts/start.mjs runtime/cli/keys.js …` runs another compiled entry point the same way.
 * In production run `node dist/runtime/main.js` directly (after `npm run build`): signals then reach the service.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DIST, ROOT, staleReason } from './build-lib.mjs';

let entry = 'runtime/main.js';
if (process.argv[2]?.endsWith('.js')) {
  entry = process.argv[2];
  process.argv.splice(2, 1);
}
const reason = staleReason();
if (reason) {
  process.stderr.write(`building the service (${reason})\n`);
  // The build's own errors go to stderr as they come.
  const run = spawnSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, stdio: ['ignore', 2, 2] });
  if (run.status !== 0) {
    // Never fall back to an older dist/: it would serve code that is not the sources', and say nothing of it.
    process.stderr.write(
      `npm start: the build failed (${run.error?.message ?? `exit ${run.status ?? run.signal}`}); ` +
        'the service was not started. Fix the error above, or run `npm run build` to see it again.\n',
    );
    process.exit(run.status || 1);
  }
}
await import(pathToFileURL(join(DIST, entry)).href);
