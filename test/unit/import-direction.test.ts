/**
 * Which folder may import which (README, "Project layout"). Data flows one way — specs → generator →
 * generated → runtime — with core/ beneath all of them. A hook sees core/ and, as types only, the generated
 * input types it is written against; never the runtime's internals.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

/** For each folder: the folders it may import at run time, and those it may import types from only. */
const ALLOWED: Record<string, { values: string[]; typesOnly?: string[] }> = {
  core: { values: ['core'] },
  generator: { values: ['generator', 'core'] },
  'specs/hooks': { values: ['specs/hooks', 'core'], typesOnly: ['generated/types.ts'] },
  generated: { values: ['generated', 'core', 'specs/hooks'] },
  runtime: { values: ['runtime', 'core', 'generated'] },
  // The client package is published on its own: nothing of the service, not even types (the generator copies the
  // types it needs into packages/client/src/generated/).
  'packages/client': { values: ['packages/client'] },
};

interface Import {
  from: string;
  to: string;
  typeOnly: boolean;
}

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const rel = join(dir, name);
    if (statSync(join(ROOT, rel)).isDirectory()) out.push(...tsFiles(rel));
    else if (name.endsWith('.ts')) out.push(rel);
  }
  return out;
}

export function importsOf(file: string, text = readFileSync(join(ROOT, file), 'utf8')): Import[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const found: Import[] = [];
  const add = (spec: string, typeOnly: boolean) => {
    if (spec.startsWith('.')) found.push({ from: file, to: normalize(join(dirname(file), spec)), typeOnly });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const allTypes =
        !!clause &&
        (clause.isTypeOnly ||
          (!clause.name &&
            !!clause.namedBindings &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.length > 0 &&
            clause.namedBindings.elements.every((e) => e.isTypeOnly)));
      add(node.moduleSpecifier.text, allTypes);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, node.isTypeOnly);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      add(node.arguments[0].text, false);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function folderOf(file: string): string | undefined {
  return Object.keys(ALLOWED)
    .sort((a, b) => b.length - a.length)
    .find((f) => file === f || file.startsWith(`${f}/`));
}

function violations(imports: Import[]): string[] {
  const out: string[] = [];
  for (const i of imports) {
    const rule = ALLOWED[folderOf(i.from)!]!;
    const inside = (targets: string[] | undefined) =>
      (targets ?? []).some((t) => i.to === t || i.to.startsWith(`${t}/`));
    if (inside(rule.values)) continue;
    if (i.typeOnly && inside(rule.typesOnly)) continue;
    out.push(`${i.from} imports ${i.to}${i.typeOnly ? ' (types)' : ''}`);
  }
  return out;
}

describe('import direction', () => {
  it('every import in core, generator, generated, specs/hooks, runtime and the client package goes the allowed way', () => {
    const files = Object.keys(ALLOWED).flatMap((dir) => tsFiles(dir).filter((f) => folderOf(f) === dir));
    expect(files.length).toBeGreaterThan(50);
    expect(violations(files.flatMap((f) => importsOf(f)))).toEqual([]);
  });

  it('catches an import that goes the wrong way', () => {
    const wrong = [
      importsOf('runtime/x.ts', "import { load } from '../generator/load.ts';"),
      importsOf('specs/hooks/x.ts', "import { send } from '../../runtime/upstream/http.ts';"),
      importsOf('specs/hooks/x.ts', "import { T } from '../../generated/types.ts';"),
      importsOf('core/x.ts', "export * from '../runtime/log.ts';"),
      importsOf('generator/x.ts', "const m = await import('../runtime/config.ts');"),
      importsOf('packages/client/src/x.ts', "import type { ToolInputs } from '../../../generated/types.ts';"),
    ].flat();
    expect(violations(wrong)).toHaveLength(6);
    const right = [
      importsOf('specs/hooks/x.ts', "import type { T } from '../../generated/types.ts';"),
      importsOf('specs/hooks/x.ts', "import { type T, type U } from '../../generated/types.ts';"),
      importsOf('runtime/x.ts', "import { tools } from '../generated/registry.ts';"),
    ].flat();
    expect(violations(right)).toEqual([]);
  });
});
