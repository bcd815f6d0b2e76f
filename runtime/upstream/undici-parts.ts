/**
 * A library workaround, kept in this one module: undici's parts, not its main module. The proxy imports undici's
 * pools (`lib/dispatcher/agent.js`) and its error classes (`lib/core/errors.js`) one by one, with the first streamed
 * request, because undici's main module loads all of undici (fetch, WebSocket, the cache and mock layers): code a
 * service that never proxies would load and parse for nothing. These paths are undici's files, not its documented
 * API: test/unit/library-workarounds.test.ts fails when the installed undici is not the version they were checked
 * against (UNDICI_CHECKED), or when these files stop being the main module's `Agent` and `errors`. On such a failure,
 * check the paths against the new version (or import `undici` itself) and update UNDICI_CHECKED.
 *
 * It was not measured against the plain `import('undici')` with the current bench (issue 36): on the shared,
 * noisy machine of that issue a start-up and memory difference of this size could not be told apart reliably.
 */
import { setFlagsFromString } from 'node:v8';

/** The undici version whose files these paths were checked against. */
export const UNDICI_CHECKED = '7.30.2';

export interface Undici {
  Agent: typeof import('undici/lib/dispatcher/agent.js');
  errors: typeof import('undici/lib/core/errors.js');
}
let undici: Undici | undefined;
let loading: Promise<Undici> | undefined;

/** undici's parts once loaded, else undefined. */
export function loadedUndici(): Undici | undefined {
  return undici;
}

export function loadUndici(): Promise<Undici> {
  // undici parses HTTP/1.1 with llhttp compiled to WebAssembly. V8 compiles it with its baseline compiler
  // (Liftoff), then recompiles the hot functions with its optimizing one on a background thread; that compile's
  // memory stays in the thread's malloc arena for good. Liftoff's code alone parses the proxy's answers at no CPU
  // per request the bench can tell apart. The flag is read when a module is compiled: set here, before undici
  // compiles llhttp, the only WebAssembly the service runs.
  if (!loading) setFlagsFromString('--liftoff-only');
  return (loading ??= Promise.all([import('undici/lib/dispatcher/agent.js'), import('undici/lib/core/errors.js')]).then(
    ([agent, errors]) => (undici = { Agent: agent.default, errors: errors.default }),
  ));
}
