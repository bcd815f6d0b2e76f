/**
 * A copy of the project in a temporary folder, for tests that change it (a new connector, a packed client): every
 * file git tracks or would track (.gitignore respected), with node_modules as a symlink to this checkout's.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..', '..');

export interface ProjectCopy {
  dir: string;
  remove(): void;
}

export function copyProject(prefix = 'acs-copy-'): ProjectCopy {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const listed = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], {
    cwd: ROOT,
    maxBuffer: 64 * 1024 * 1024,
  })
    .toString('utf8')
    .split('\0')
    .filter(Boolean);
  for (const file of listed) {
    const from = join(ROOT, file);
    if (!existsSync(from)) continue; // deleted in the work tree, not yet in the index
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    copyFileSync(from, join(dir, file));
  }
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The environment for a command run in a copy: this process's, without what would make a nested vitest a worker. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('VITEST') || k === 'NODE_OPTIONS' || k === 'TEST' || k === 'NODE_ENV') continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}
