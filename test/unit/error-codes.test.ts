/**
 * The error-code catalogue (core/error-codes.ts) is the service's one list of codes: every literal status given
 * with a code where an error is made matches the catalogue's, every code in it is used, and docs/http-api.md lists
 * each with its status and meaning. (That no other code can be used is the type ErrorCode's work: tsc refuses it.)
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, type ErrorCode } from '../../core/error-codes.ts';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });
}
const files = [...sources('core'), ...sources('runtime'), ...sources('specs/hooks')].filter(
  (f) => f !== join('core', 'error-codes.ts'),
);

interface Made {
  where: string;
  code: string;
  status: number | undefined;
}

/** Every error made with a literal code: new ServiceError(status, code), new UpstreamFailure(code, m, status = 502),
 * new NetworkFailure(code, m, status), conflict(code), and sendJson(res, status, errorBody(req, code, …)). */
function errorsMade(): Made[] {
  const made: Made[] = [];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const lit = (n: ts.Node | undefined) => (n && ts.isStringLiteral(n) ? n.text : undefined);
    const num = (n: ts.Node | undefined) => (n && ts.isNumericLiteral(n) ? Number(n.text) : undefined);
    const at = (n: ts.Node) => `${file}:${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1}`;
    const visit = (n: ts.Node): void => {
      if ((ts.isNewExpression(n) || ts.isCallExpression(n)) && n.arguments) {
        const name = n.expression.getText(sf);
        const a = n.arguments;
        if (ts.isNewExpression(n) && name === 'ServiceError' && lit(a[1]))
          made.push({ where: at(n), code: lit(a[1])!, status: num(a[0]) });
        if (ts.isNewExpression(n) && (name === 'UpstreamFailure' || name === 'NetworkFailure') && lit(a[0]))
          made.push({ where: at(n), code: lit(a[0])!, status: a[2] ? num(a[2]) : 502 });
        if (ts.isCallExpression(n) && name === 'conflict' && lit(a[0]))
          made.push({ where: at(n), code: lit(a[0])!, status: 409 });
        if (ts.isCallExpression(n) && name === 'sendJson' && a[2] && ts.isCallExpression(a[2])) {
          const body = a[2];
          if (body.expression.getText(sf) === 'errorBody' && lit(body.arguments[1]))
            made.push({ where: at(n), code: lit(body.arguments[1])!, status: num(a[1]) });
        }
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return made;
}

describe('the error-code catalogue', () => {
  const made = errorsMade();

  it('finds the errors the service makes', () => {
    expect(made.length).toBeGreaterThan(50);
  });

  it("gives each code the catalogue's status wherever a literal status is given with it", () => {
    const wrong = made
      .filter((m) => m.code in ERROR_CODES && m.status !== undefined && m.code !== 'provider_error')
      .filter((m) => ERROR_CODES[m.code as ErrorCode].status !== m.status)
      .map((m) => `${m.where}: ${m.code} with ${m.status}, catalogue ${ERROR_CODES[m.code as ErrorCode].status}`);
    expect(wrong).toEqual([]);
  });

  it('has no code the service never uses', () => {
    const text = files.map((f) => readFileSync(f, 'utf8')).join('\n');
    const unused = Object.keys(ERROR_CODES).filter((code) => !text.includes(`'${code}'`));
    expect(unused).toEqual([]);
  });

  it('is listed in docs/http-api.md, each code with its status and meaning', () => {
    const page = readFileSync('docs/http-api.md', 'utf8');
    const start = page.indexOf('\n## Error codes\n');
    expect(start).toBeGreaterThan(-1);
    const end = page.indexOf('\n## ', start + 1);
    const rows = [
      ...page.slice(start, end < 0 ? undefined : end).matchAll(/^\| `([a-z_]+)` +\| ([^|]+?) +\| (.+?) +\|$/gm),
    ];
    const listed = new Map(rows.map((r) => [r[1]!, { status: r[2]!, meaning: r[3]! }]));
    expect([...listed.keys()].sort()).toEqual(Object.keys(ERROR_CODES).sort());
    for (const [code, { status, meaning }] of Object.entries(ERROR_CODES)) {
      expect(listed.get(code)!.status, code).toBe(status === 0 ? "the provider's" : String(status));
      expect(listed.get(code)!.meaning, code).toBe(meaning);
    }
  });
});
