/**
 * Makes the MCP conformance suite run on Node 20. The suite's bundle imports `globSync` from `fs`, which Node adds in
 * 22; on Node 20 the import fails at link time, before any scenario runs. Loaded with `node --import` in front of the
 * suite's CLI, this registers a module resolve hook: where `fs` lacks `globSync`, an import of `fs` from the suite's
 * own files resolves to fs-with-glob.mjs — every export of `node:fs`, plus `globSync` by tinyglobby. Nothing else is
 * touched, and on a Node that has `fs.globSync` the hook registers nothing.
 */
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') {
  register('./fs-glob-resolve.mjs', import.meta.url);
}
