/**
 * A library workaround, kept in this one module: a global patch of got's `Options.prototype.createNativeRequestOptions`,
 * which reads got's private `_internals`. Imported once, for its effect, by got-client.ts.
 *
 * got's internals are not its API: test/unit/library-workarounds.test.ts fails when the installed got is not the
 * version this was checked against (GOT_CHECKED), or when the patched method no longer gives what got's own gives
 * (less its undefined keys); test/unit/stable-shapes.test.ts checks the shapes it keeps. On such a failure, check
 * the method against the new got and update GOT_CHECKED, or remove the patch.
 *
 * Measured against the plain library (issue 36): `npx tsx bench/instructions.ts --against <this tree without the
 * patch>`, 1,000 calls after 3,000 of warm-up, counted 1,165k instructions per tool call on the JavaScript thread
 * without the patch and 804k with it (0.69×; the proxy, which does not use got, 388k and 364k: the run's spread).
 * It buys far more than the 5 % a workaround must buy to stay (bench/README.md).
 */
import { Options } from 'got';

/** The got version whose `Options` internals this was checked against. */
export const GOT_CHECKED = '14.6.6';

/**
 * got's options for `http.request`, built so that they keep one shape from call to call.
 *
 * On Node 20 (V8 11.3), an object literal that spreads a non-empty object and then adds keys the spread did not
 * have (`{ ...a, b: 1 }`) gets hidden classes of its own on every evaluation: V8 builds a new map, and copies the
 * descriptors so far, for each added key, instead of reusing the transitions of the previous evaluation. got
 * builds its options for `http.request` with such a literal on every request (its cache options spread first,
 * then 34 keys): 18 KB of garbage and about 65 µs per call, measured alone. So when a request uses no cache (none
 * of the service's does), its cache options are left out of that spread: only got's cache layer reads them, and
 * the spread of an empty object keeps one shape. With a cache, got's own method runs as it is. This takes the tool
 * call from about 580 to 450 µs of CPU.
 */
// eslint-disable-next-line @typescript-eslint/unbound-method -- kept to be called with `.call(options)`, as below
export const gotNativeRequestOptions = Options.prototype.createNativeRequestOptions;
const NO_CACHE_OPTIONS = Object.freeze({});
Options.prototype.createNativeRequestOptions = function (this: Options) {
  const internals = (this as unknown as { _internals: { cache: unknown; cacheOptions: object } })._internals;
  if (internals.cache) return gotNativeRequestOptions.call(this);
  const cacheOptions = internals.cacheOptions;
  internals.cacheOptions = NO_CACHE_OPTIONS;
  let options: Record<string, unknown>;
  try {
    options = gotNativeRequestOptions.call(this);
  } finally {
    internals.cacheOptions = cacheOptions;
  }
  return definedOnly(options) as ReturnType<typeof gotNativeRequestOptions>;
};

/**
 * got's options for `http.request` without the keys it sets to `undefined` (most of its 35: the TLS options of an
 * http: URL, the HTTP/2 ones, those the service leaves unset). Node reads an `undefined` option as an absent one,
 * but copies every key, twice per request: `http.request` assigns the options onto the URL's, and the agent
 * spreads them into a dictionary. The service's requests keep five of the 35 keys; in one process sending 16 at
 * a time, that took the client's CPU per request from 210-219 to 196-201 µs (medians of two runs of six rounds;
 * when it was made). The copy is built key by key onto an empty literal, so it keeps one shape.
 */
function definedOnly(options: Record<string, unknown>): Record<string, unknown> {
  const defined: Record<string, unknown> = {};
  for (const key in options) {
    const value = options[key];
    if (value !== undefined) defined[key] = value;
  }
  return defined;
}
