import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain JavaScript module without types (it runs before anything is compiled)
import { lazyListFormat as lazyListFormatUntyped } from '../../scripts/build-lib.mjs';

/** What `npm run build` changes in the packages it bundles (scripts/build-lib.mjs). */
const lazyListFormat = lazyListFormatUntyped as (source: string) => string;

const ListFormat = Intl.ListFormat;
/** Intl's own properties are writable; TypeScript's lib declares them read-only. */
const intl = Intl as { ListFormat: typeof Intl.ListFormat };
afterEach(() => {
  intl.ListFormat = ListFormat;
});

/** Counts the Intl.ListFormat objects built from here on. */
function countListFormats(): { built: number } {
  const count = { built: 0 };
  intl.ListFormat = class extends ListFormat {
    constructor(...args: ConstructorParameters<typeof ListFormat>) {
      super(...args);
      count.built++;
    }
  };
  return count;
}

const importSource = (source: string) =>
  import(/* @vite-ignore */ `data:text/javascript;base64,${Buffer.from(source).toString('base64')}`) as Promise<{
    both: (list: string[]) => string;
  }>;

describe('lazyListFormat', () => {
  it('makes both formatters of the installed @sindresorhus/is lazy, so the bundle gets them', () => {
    // got's copy, found from got's own module as Node finds it.
    const gotModule = fileURLToPath(new URL('../../node_modules/got/dist/source/index.js', import.meta.url));
    const isMain = createRequire(gotModule).resolve('@sindresorhus/is');
    const source = readFileSync(isMain, 'utf8');
    expect(source.match(/^const \w+ = new Intl\.ListFormat\(/gm)).toHaveLength(2);
    const lazy = lazyListFormat(source);
    expect(lazy.match(/^const \w+ = new Intl\.ListFormat\(/gm)).toBeNull();
    expect(lazy.match(/\?\?= new Intl\.ListFormat\(/g)).toHaveLength(2);
  });

  it('builds a formatter on its first use only, and formats as the eager one does', async () => {
    const source = [
      "const andFormatter = new Intl.ListFormat('en', { style: 'long', type: 'conjunction' });",
      "const orFormatter = new Intl.ListFormat('en', { style: 'long', type: 'disjunction' });",
      'export const both = (list) => `${andFormatter.format(list)} / ${orFormatter.format(list)}`;',
    ].join('\n');
    const count = countListFormats();
    const eager = await importSource(source);
    expect(count.built).toBe(2);
    count.built = 0;
    const lazy = await importSource(lazyListFormat(source));
    expect(count.built).toBe(0);
    expect(lazy.both(['a', 'b', 'c'])).toBe('a, b, and c / a, b, or c');
    expect(lazy.both(['x', 'y'])).toBe(eager.both(['x', 'y']));
    expect(count.built).toBe(2);
  });

  it('leaves a source without such a line as it is', () => {
    const source = "const f = new Intl.NumberFormat('en');\nfunction g() { const h = new Intl.ListFormat('en'); }\n";
    expect(lazyListFormat(source)).toBe(source);
  });
});
