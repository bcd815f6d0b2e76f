/**
 * `node:fs` with `globSync` (Node 22's `fs.globSync(pattern, { cwd, exclude })`) for Node 20, by tinyglobby: the
 * suite uses it to collect `checks.json` files under a results directory.
 */
import fs from 'node:fs';
import process from 'node:process';
import { globSync as tinyGlobSync } from 'tinyglobby';

export * from 'node:fs';
export default fs;

export function globSync(pattern, options = {}) {
  const patterns = Array.isArray(pattern) ? pattern : [pattern];
  const ignore = Array.isArray(options.exclude) ? options.exclude : [];
  return tinyGlobSync(patterns, {
    cwd: options.cwd ? String(options.cwd) : process.cwd(),
    ignore,
    dot: true,
    expandDirectories: false,
  });
}
