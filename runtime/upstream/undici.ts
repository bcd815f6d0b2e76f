/**
 * undici, which the proxy's streamed requests use (runtime/upstream/stream.ts), loaded with the first streamed request
 * rather than at start: a service that never proxies does not load or parse it.
 *
 * This imported undici's pools and error classes file by file until issue 36, to skip the rest of undici's main
 * module (fetch, WebSocket, the cache and mock layers). That bought nothing per request, only a smaller first load,
 * so by the rule for library workarounds (bench/README.md: a workaround stays only where it buys at least 5 % of
 * CPU per request on a hot path) it gave way to undici's documented entry point.
 */
import { setFlagsFromString } from 'node:v8';

export interface Undici {
  Agent: typeof import('undici').Agent;
  errors: typeof import('undici').errors;
}
let undici: Undici | undefined;
let loading: Promise<Undici> | undefined;

/** undici once loaded, else undefined. */
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
  return (loading ??= import('undici').then((m) => {
    // Node gives a CommonJS package's exports by name as well as `default`; the bundle in dist/ (esbuild, a chunk
    // of its own) gives `default` only. `m.Agent` alone made every proxied request of the compiled service fail.
    const byDefault = m.default as unknown as Partial<Undici> | undefined;
    const exported = byDefault?.Agent ? (byDefault as Undici) : m;
    return (undici = { Agent: exported.Agent, errors: exported.errors });
  }));
}
