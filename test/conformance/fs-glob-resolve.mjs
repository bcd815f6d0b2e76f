/** The resolve hook fs-glob-hook.mjs registers: `fs` imported by the conformance suite → fs-with-glob.mjs. */
import { URL } from 'node:url';
const SHIM = new URL('./fs-with-glob.mjs', import.meta.url).href;
const SUITE = '/node_modules/@modelcontextprotocol/conformance/';

export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL?.includes(SUITE)) {
    return { url: SHIM, shortCircuit: true };
  }
  return next(specifier, context);
}
