/**
 * A new connector is YAML alone (issue 36, item 3): a copy of the project gains one throwaway connector file,
 * test/fixtures/new-connector/kanban.yaml, and nothing else; `npm run generate` takes it in (its examples checked
 * against the requests its tools build), and `npm run check` (generated/ up to date, format, lint, types and every
 * unit test, the golden and search tests over the new tools included) passes in the copy.
 *
 * It runs the whole unit suite in the copy, so it is in the e2e project (never in the unit project it runs).
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { connectors, tools } from '../../generated/registry.ts';
import { childEnv, copyProject, ROOT } from '../helpers/project-copy.ts';

const run = promisify(execFile);
const fixture = join(ROOT, 'test/fixtures/new-connector/kanban.yaml');
const spec = parse(readFileSync(fixture, 'utf8')) as { name: string; tools: Array<{ name: string }> };
const copy = copyProject('acs-new-connector-');

afterAll(() => copy.remove());

/** Runs an npm script in the copy; its output is kept for the failure message. */
async function npm(...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run('npm', ['run', '--silent', ...args], {
      cwd: copy.dir,
      env: childEnv({ FORCE_COLOR: '0', NO_COLOR: '1' }),
      maxBuffer: 256 * 1024 * 1024,
    });
    return { code: 0, output: stdout + stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof err.code === 'number' ? err.code : 1, output: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}

describe('a new connector written in YAML alone', () => {
  it('is a connector this project does not have yet', () => {
    expect(connectors.has(spec.name)).toBe(false);
    expect(spec.tools.length).toBeGreaterThan(0);
  });

  it('is generated, and the whole check passes in a copy of the project', { timeout: 30 * 60_000 }, async () => {
    copyFileSync(fixture, join(copy.dir, 'specs', `${spec.name}.yaml`));
    const generated = await npm('generate');
    expect(generated.code, generated.output).toBe(0);
    expect(generated.output).toContain(
      `for ${connectors.size + 1} connectors, ${tools.size + spec.tools.length} tools`,
    );
    for (const file of [`generated/connectors/${spec.name}.ts`, `generated/docs/${spec.name}.md`])
      expect(existsSync(join(copy.dir, file)), file).toBe(true);
    const registry = readFileSync(join(copy.dir, 'generated/registry.ts'), 'utf8');
    expect(registry).toContain(`./connectors/${spec.name}.ts`);

    const check = await npm('check');
    expect(check.code, check.output.slice(-20_000)).toBe(0);
    // The unit tests ran, over the new connector's tools too (the golden test names each tool).
    // (vitest's summary is "Tests  N passed (N)" only when none failed.)
    expect(check.output).toMatch(/Tests\s+\d+ passed \(\d+\)/);
  });
});
