/**
 * `npm start` (scripts/start.mjs) on a tree whose sources no longer build: it must stop with a non-zero exit and
 * the build's error, not run the older dist/ that is still there. Runs the real scripts on a scratch copy of the
 * project's layout (the scripts, one broken source, node_modules linked), so the project's own dist/ is untouched.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = mkdtempSync(join(tmpdir(), 'acs-start-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('npm start with sources that do not build', () => {
  it('exits non-zero with the build error and does not run the previous build', () => {
    cpSync('scripts', join(root, 'scripts'), { recursive: true });
    symlinkSync(join(process.cwd(), 'node_modules'), join(root, 'node_modules'));
    writeFileSync(join(root, 'package.json'), JSON.stringify({ type: 'module' }));
    // A previous, complete build, older than the sources.
    mkdirSync(join(root, 'dist/runtime'), { recursive: true });
    writeFileSync(join(root, 'dist/runtime/main.js'), "console.log('the previous build ran');\n");
    writeFileSync(join(root, 'dist/.build-stamp'), 'earlier\n');
    const earlier = new Date(Date.now() - 3_600_000);
    utimesSync(join(root, 'dist/.build-stamp'), earlier, earlier);
    for (const dir of ['core', 'generated', 'runtime', 'specs/hooks']) mkdirSync(join(root, dir), { recursive: true });
    writeFileSync(join(root, 'runtime/main.ts'), 'export const broken = ;\n');

    const run = spawnSync(process.execPath, [join(root, 'scripts/start.mjs')], { cwd: root, encoding: 'utf8' });

    expect(run.stdout).not.toContain('the previous build ran');
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain('runtime/main.ts');
    expect(run.stderr).toMatch(/Unexpected ";"/);
    expect(run.stderr).toContain('the service was not started');
  });
});
