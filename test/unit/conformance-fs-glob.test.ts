/**
 * The Node 20 shim the MCP conformance suite runs behind (test/conformance/fs-glob-hook.mjs): its `fs` has every
 * export of `node:fs` and a `globSync(pattern, { cwd, exclude })` that finds what Node 22's does.
 */
import fsDefault, * as realFs from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain ES module without declarations (it is loaded by node --import, not compiled)
import * as shim from '../conformance/fs-with-glob.mjs';

const dir = join(import.meta.dirname, '../conformance');

describe('fs with globSync for the conformance suite on Node 20', () => {
  it('finds files by pattern under cwd, relative to it, and leaves out what exclude names', () => {
    const globSync = (shim as { globSync: (p: string, o: object) => string[] }).globSync;
    expect(globSync('**/*.yaml', { cwd: dir }).sort()).toEqual([
      'expected-failures-2025-11-25.yaml',
      'expected-failures-2026-07-28.yaml',
    ]);
    expect(globSync('*.yaml', { cwd: dir, exclude: ['*2025*'] })).toEqual(['expected-failures-2026-07-28.yaml']);
    expect(globSync('**/checks.json', { cwd: dir })).toEqual([]);
  });

  it('keeps every export of node:fs', () => {
    for (const name of Object.keys(realFs)) expect(name in shim, name).toBe(true);
    expect((shim as { default: unknown }).default).toBe(fsDefault);
  });
});
