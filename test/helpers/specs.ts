/** Connector specs written on the fly, for the generator's tests. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from '../../generator/main.ts';

/** A new temporary specs folder holding one spec, `<name>.yaml`. */
export function specDir(yaml: string, name: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'acs-spec-'));
  writeFileSync(join(dir, `${name}.yaml`), yaml);
  return dir;
}

/** The generator's error message for a spec it must refuse; a spec it accepts fails the test. */
export async function generatorError(yaml: string, name: string): Promise<string> {
  try {
    await generate(specDir(yaml, name));
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('expected the generator to fail');
}
