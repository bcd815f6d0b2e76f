/** The README's connector summary is written by the generator, so a new connector cannot leave it wrong. */
import { readFileSync } from 'node:fs';
import * as prettier from 'prettier';
import { describe, expect, it } from 'vitest';
import { emitReadmeConnectors, NUMBER_WORDS, README_END, README_START } from '../../generator/emit-docs.ts';
import { loadSpecFile, specFiles } from '../../generator/load.ts';

const readme = readFileSync('README.md', 'utf8');
const connectors = specFiles('specs').map((f) => loadSpecFile(f).spec);

describe("README's connector summary", () => {
  it('is what the specs produce', async () => {
    const config = (await prettier.resolveConfig('package.json')) ?? {};
    expect(await prettier.format(emitReadmeConnectors(readme, connectors), { ...config, parser: 'markdown' })).toBe(
      readme,
    );
  });

  it('follows a new connector: counts, table row and hooks', () => {
    const extra = {
      ...connectors[0]!,
      name: 'extra',
      provider: 'Extra API | v1',
      tools: [{ ...connectors[0]!.tools[0]!, hook: 'x' }],
    };
    const out = emitReadmeConnectors(readme, [...connectors, extra]);
    const total = connectors.reduce((n, c) => n + c.tools.length, 0) + 1;
    expect(out).toContain(
      `${NUMBER_WORDS[connectors.length + 1] ?? connectors.length + 1} connectors, ${total} tools;`,
    );
    expect(out).toMatch(/\| \[`extra`\]\(generated\/docs\/extra\.md\) \| 1 \| Extra API \\\| v1 \| /);
    expect(out).toContain('`specs/hooks/extra.ts`');
    expect(out.indexOf(README_START)).toBe(readme.indexOf(README_START));
    expect(out.slice(out.indexOf(README_END))).toBe(readme.slice(readme.indexOf(README_END)));
  });

  it('needs its markers', () => {
    expect(() => emitReadmeConnectors('# No markers\n', connectors)).toThrow(/README\.md must contain/);
  });
});
