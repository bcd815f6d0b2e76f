/** The generator: spec errors that name file, line, tool and field; the request-template semantics; drift. */
import { mkdtempSync, mkdirSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generate } from '../../generator/main.ts';
import * as H from '../../core/template-runtime.ts';
import { generatorError, specDir } from '../helpers/specs.ts';

const header = `name: demo
title: Demo
description: Demo connector
provider: Demo API
auth:
  - kind: api_key
    fields: [{ name: api_key, title: Key, secret: true }]
    apply: { headers: { X-API-Key: "{api_key}" } }
api:
  base_url: https://api.demo.example
tools:
`;

const errorsOf = (yaml: string) => generatorError(yaml, 'demo');

describe('spec errors', () => {
  it('names the file, line, tool and field of a meta-schema violation', async () => {
    const msg = await errorsOf(
      header +
        `  - name: demo_get
    title: Test tool get
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
    output: { shape: {} }
    description: Get
    input:
      id: { type: strng, required: true }
    request: { method: GET, path: "/items/{id}" }
    examples: [{ input: { id: "1" }, requests: [{ method: GET, url: "https://api.demo.example/items/1" }] }]
`,
    );
    expect(msg).toMatch(
      /demo\.yaml:18:\d+: tool demo_get, field input\.id\.type: must be one of: string, number, integer, boolean, object, array/,
    );
  });

  it('reports semantic problems: unknown parameters in templates, optional path parameters, unused inputs, bad examples', async () => {
    const msg = await errorsOf(
      header +
        `  - name: demo_a
    title: Test tool a
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
    output: { shape: {} }
    description: A
    input:
      id: { type: string }
      unused: { type: string }
    request: { method: GET, path: "/items/{id}", query: { q: "{missing}" } }
    examples: [{ input: { id: 1 }, requests: [{ method: GET, url: "x" }] }]
  - name: other_b
    title: Test tool b
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
    output: { shape: {} }
    description: B
    input: {}
    request: { method: GET, path: /b }
    examples: [{ input: {}, requests: [{ method: GET, url: "x" }] }]
`,
    );
    expect(msg).toContain('tool demo_a, field request.path: path parameter "id" must be a required input parameter');
    expect(msg).toContain('tool other_b, field name: must start with "demo_"');
  });

  it('refuses the old form of a parameter in query, with file, line, field and how to write it now', async () => {
    const msg = await errorsOf(
      header +
        `  - name: demo_list
    title: Test tool list
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
    output: { shape: {} }
    description: List
    input:
      page: { type: integer }
    request: { method: GET, path: /items, query: { page: page } }
    examples: [{ input: {}, requests: [{ method: GET, url: "https://api.demo.example/items" }] }]
`,
    );
    expect(msg).toContain(
      `demo.yaml:19:58: tool demo_list, field request.query.page: "page" is text, not the input parameter page: a bare string is always literal text. Write '{page}' (quoted) for the parameter's value`,
    );
  });

  it('reads a bare string in query, headers, body and arguments alike: text, with {placeholders}', async () => {
    const out = await generate(
      specDir(
        header +
          `  - name: demo_send
    title: Test tool send
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
    output: { shape: {} }
    description: Send
    input:
      n: { type: integer, required: true }
    request:
      method: POST
      path: "/items/{n}"
      query: { fmt: json, n: "{n}", label: "n={n}" }
      headers: { X-Fmt: json, X-N: "n={n}" }
      body: { fmt: json, n: "{n}", label: "n={n}" }
    examples:
      - input: { n: 1 }
        requests:
          - method: POST
            url: "https://api.demo.example/items/1?fmt=json&n=1&label=n%3D1"
            headers: { x-fmt: json, x-n: n=1 }
            body: { fmt: json, n: 1, label: n=1 }
`,
        'demo',
      ),
    );
    const code = out.files.get('generated/connectors/demo.ts')!.replace(/\s+/g, ' ');
    const text = "H.tpl(['n=', input['n'], ''])";
    expect(code).toContain(`[ ['fmt', 'json'], ['n', input['n']], ['label', ${text}], ]`);
    expect(code).toContain(`headers: H.obj({ 'X-Fmt': 'json', 'X-N': ${text} }, [])!`);
    expect(code).toContain(`body: H.obj({ fmt: 'json', n: input['n'], label: ${text} }, [])!`);
  });

  it('hints at quoting when an unknown key is the rest of a text value cut at a comma', async () => {
    const msg = await errorsOf(
      header +
        `  - name: demo_list
    title: Test tool list
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
    output: { shape: {} }
    description: List
    input:
      sort: { type: string, description: Results, sorted by date }
      page: { type: integer, descripton: Page }
    request: { method: GET, path: /items, query: { sort: "{sort}", page: "{page}" } }
    examples: [{ input: {}, requests: [{ method: GET, url: "https://api.demo.example/items" }] }]
`,
    );
    expect(msg).toContain(
      'tool demo_list, field input.sort.sorted by date: is not a known field here: it looks like the rest of a text value cut at a comma (in a one-line { ... } mapping a comma ends a value); quote the text: description: "Results, sorted by date"',
    );
    expect(msg).toContain(
      'tool demo_list, field input.page.descripton: is not a known field here (check the spelling against specs/connector.schema.json)',
    );
  });

  it('says "must be an array" for a field of the wrong type', async () => {
    const msg = await errorsOf(
      header +
        '  - name: demo_x\n    title: X\n    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }\n    description: X\n    input: {}\n    rules: x\n',
    );
    expect(msg).toContain('tool demo_x, field rules: must be an array');
  });

  it('rejects YAML syntax errors with a line', async () => {
    expect(await errorsOf('name: demo\n  bad: [')).toMatch(/demo\.yaml:\d+:\d+: .*YAML syntax/);
  });

  it('catches unknown transforms and misplaced $item', async () => {
    const msg = await errorsOf(
      header +
        `  - name: demo_c
    title: Test tool c
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
    output: { shape: {} }
    description: C
    input:
      a: { type: string, required: true }
    request:
      method: POST
      path: /c
      body: { x: { $in: a, $pipe: [nope] }, y: { $item: true } }
    examples: [{ input: { a: "1" }, requests: [{ method: POST, url: "x" }] }]
`,
    );
    expect(msg).toContain('unknown transform "nope"');
  });
});

describe('generated output', () => {
  it('is deterministic', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'acs-gen-'));
    mkdirSync(dir, { recursive: true });
    copyFileSync('specs/helpdesk.yaml', join(dir, 'helpdesk.yaml'));
    const a = await generate(dir);
    const b = await generate(dir);
    expect([...a.files.keys()]).toEqual([...b.files.keys()]);
    for (const [k, v] of a.files) expect(b.files.get(k), k).toBe(v);
  });
});

describe('template runtime', () => {
  it('drops objects whose input-derived values are all absent, keeps literal-only ones', () => {
    expect(H.obj({ content: undefined, contentType: 'text' }, ['content'])).toBeUndefined();
    expect(H.obj({ content: 'x', contentType: 'text' }, ['content'])).toEqual({ content: 'x', contentType: 'text' });
    expect(H.obj({ a: 1 }, [])).toEqual({ a: 1 });
  });
  it('joins, concatenates and interpolates only what is present', () => {
    expect(H.join(['a', undefined, 'b'], ' and ')).toBe('a and b');
    expect(H.join([undefined], ',')).toBeUndefined();
    expect(H.concat([[1], undefined, [2, 3]])).toEqual([1, 2, 3]);
    expect(H.tpl(['x=', 1, ''])).toBe('x=1');
    expect(H.tpl(['x=', undefined, ''])).toBeUndefined();
  });
  it('encodes query values the way providers parse them, and path segments strictly', () => {
    expect(
      H.url('https://h', '/p', [
        ['$filter', "status eq 'a b'"],
        ['n', 1],
        ['skip', undefined],
        ['tag', ['x', 'y']],
      ]),
    ).toBe("https://h/p?$filter=status%20eq%20'a%20b'&n=1&tag=x&tag=y");
    expect(H.url('https://h', '/p', [['q', 'a&b=c+d']])).toBe('https://h/p?q=a%26b%3Dc%2Bd');
    expect(H.seg('../x/y?z')).toBe('..%2Fx%2Fy%3Fz');
  });
  it('merges present objects, later ones winning, and treats empty values as not given', () => {
    expect(H.merge([{ a: 1, b: 2 }, undefined, { b: 3, c: undefined }])).toEqual({ a: 1, b: 3 });
    expect(H.merge([{}, undefined])).toBeUndefined();
    expect([undefined, null, '', [], {}].map(H.present)).toEqual([false, false, false, false, false]);
    expect([0, false, 'x', [1], { a: 1 }].map(H.present)).toEqual([true, true, true, true, true]);
  });
  it('derives stable UUIDs for idempotency', () => {
    expect(H.uuidFrom(['a', 1])).toBe(H.uuidFrom(['a', 1]));
    expect(H.uuidFrom(['a', 1])).not.toBe(H.uuidFrom(['a', 2]));
    expect(H.uuidFrom(['a'])).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

describe('body roots', () => {
  it('keep their literal members when every input-derived member is absent', async () => {
    const dir = specDir(
      header +
        `  - name: demo_patch
    title: Test tool patch
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
    output: { shape: {} }
    description: Patch
    input:
      id: { type: string, required: true }
      owner: { type: string }
    request:
      method: PATCH
      path: "/items/{id}"
      body: { owner: { $in: owner }, status: DONE, nested: { note: { $in: owner }, kind: x } }
    examples:
      - input: { id: "1" }
        requests: [{ method: PATCH, url: "https://api.demo.example/items/1", body: { status: DONE } }]
`,
      'demo',
    );
    const out = await generate(dir);
    const code = out.files.get('generated/connectors/demo.ts')!;
    expect(code).toMatch(/H\.obj\(\s*\{\s*owner: input\['owner'\],\s*status: 'DONE'/);
  });
});
