/**
 * `npm start`: the compiled service (dist/runtime/main.js), built first when dist/ is missing or older than the
 * sources, so `npm install && npm start` works from a fresh clone. The service runs in this very process.
 * `node scripts/start.mjs runtime/cli/keys.js …` runs another compiled entry point the same way.
 * In production run `node dist/runtime/main.js` directly (after `npm run build`): signals then reach the service.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
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
  const built = existsSync(join(DIST, entry));
  process.stderr.write(`building the service (${reason})\n`);
  const run = spawnSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, stdio: ['ignore', 2, 2] });
  if (run.status !== 0) {
    if (!built) process.exit(run.status ?? 1);
    process.stderr.write('the build failed: running the previous build in dist/\n');
  }
}
await import(pathToFileURL(join(DIST, entry)).href);
