/**
 * The service's workarounds of library internals, each isolated in one module, fail here when the library changes
 * under them (issue 36, item 2): the installed version must be the one each was checked against, and what each
 * relies on must still be there and still behave as it did.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Options } from 'got';
import { GOT_CHECKED, gotNativeRequestOptions } from '../../runtime/upstream/got-patch.ts';

/** The version of the package the service resolves (its package.json, read as a file: got's exports hide it). */
const installed = (name: string) =>
  (
    JSON.parse(readFileSync(new URL(`../../node_modules/${name}/package.json`, import.meta.url), 'utf8')) as {
      version: string;
    }
  ).version;

describe("the patch of got's Options (runtime/upstream/got-patch.ts)", () => {
  it('was checked against the installed got', () => {
    expect(installed('got'), 'got changed: check got-patch.ts against it, then update GOT_CHECKED').toBe(GOT_CHECKED);
  });

  it("finds got's private internals where it reads them, and gives what got's own method gives less undefined keys", () => {
    const options = new Options('https://api.example.com/v2/items?page=2', {
      method: 'POST',
      headers: { 'x-api-key': 'k' },
    });
    const internals = (options as unknown as { _internals: Record<string, unknown> })._internals;
    expect(internals).toHaveProperty('cache');
    expect(internals).toHaveProperty('cacheOptions');
    // eslint-disable-next-line @typescript-eslint/unbound-method -- compared, not called
    expect(Options.prototype.createNativeRequestOptions).not.toBe(gotNativeRequestOptions);
    const ours = options.createNativeRequestOptions() as Record<string, unknown>;
    const gots = gotNativeRequestOptions.call(options) as Record<string, unknown>;
    const definedOfGots = Object.fromEntries(Object.entries(gots).filter(([, v]) => v !== undefined));
    // got's cache options are the one thing left out, and only from the spread: they are not among its keys.
    expect(ours).toStrictEqual(definedOfGots);
    expect(Object.keys(gots).length).toBeGreaterThan(Object.keys(ours).length);
  });
});
