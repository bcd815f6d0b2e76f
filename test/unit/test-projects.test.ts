/** Every test file runs in exactly one test project: a file in a folder no project names would never run. */
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectFolders } from '../../vitest.config.ts';

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return testFiles(path);
    return e.name.endsWith('.test.ts') ? [relative(process.cwd(), path)] : [];
  });
}

describe('test projects', () => {
  it('run every test file under test/, each in exactly one project', () => {
    const files = testFiles(join(process.cwd(), 'test'));
    expect(files.length).toBeGreaterThan(0);
    const owners = files.map((file) => ({
      file,
      projects: Object.entries(projectFolders)
        .filter(([, folders]) => folders.some((f) => file.startsWith(`${f}/`)))
        .map(([name]) => name),
    }));
    expect(owners.filter((o) => o.projects.length !== 1)).toEqual([]);
  });
});
