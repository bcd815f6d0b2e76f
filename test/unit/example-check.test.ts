/**
 * `npm run generate` runs each tool's compiled request builder on its examples and refuses an example that
 * contradicts the request the tool builds, naming the file, line, tool and the example's field that is wrong.
 */
import { describe, expect, it } from 'vitest';
import { generate } from '../../generator/main.ts';
import { generatorError, specDir } from '../helpers/specs.ts';

const spec = (example: string) => `name: demo
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
  - name: demo_create
    title: Create an item of the demo
    annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false }
    output: { shape: {} }
    description: Creates an item.
    input:
      list: { type: string, required: true }
      title: { type: string, required: true }
      tags: { type: string, description: Comma-separated tags. }
      limit: { type: integer, default: 10 }
    request:
      method: POST
      path: /lists/{list}/items
      query: { limit: '{limit}' }
      body: { title: '{title}', tags: '{tags|csv}' }
    examples:
${example}`;

const right = `      - input: { list: l1, title: Milk, tags: 'a, b' }
        requests:
          - method: POST
            url: https://api.demo.example/lists/l1/items?limit=10
            body: { title: Milk, tags: [a, b] }
`;

describe('examples against the requests their tools build', () => {
  it('accepts an example that states the request the tool builds (defaults applied)', async () => {
    const out = await generate(specDir(spec(right), 'demo'));
    expect(out.toolCount).toBe(1);
  });

  it('names the body field an example gets wrong', async () => {
    const msg = await generatorError(spec(right.replace('tags: [a, b]', 'tags: [a, c]')), 'demo');
    expect(msg).toMatch(
      /demo\.yaml:\d+:\d+: tool demo_create, field examples\[0\]\.requests\[0\]\.body\.tags\[1\]: says "c", but the request the tool builds has "b"/,
    );
  });

  it('names a wrong method, path, query, a missing body field and a wrong number of requests', async () => {
    expect(await generatorError(spec(right.replace('- method: POST', '- method: PUT')), 'demo')).toMatch(
      /tool demo_create, field examples\[0\]\.requests\[0\]\.method: says PUT, but the request the tool builds is a POST/,
    );
    expect(await generatorError(spec(right.replace('/lists/l1/', '/lists/l2/')), 'demo')).toMatch(
      /field examples\[0\]\.requests\[0\]\.url: says https:\/\/api\.demo\.example\/lists\/l2\/items, but the request the tool builds goes to https:\/\/api\.demo\.example\/lists\/l1\/items/,
    );
    expect(await generatorError(spec(right.replace('?limit=10', '?limit=5')), 'demo')).toMatch(
      /field examples\[0\]\.requests\[0\]\.url: has a query that differs from the one the tool builds: the example has limit=5; the tool sends limit=10/,
    );
    expect(await generatorError(spec(right.replace('body: { title: Milk, tags', 'body: { tags')), 'demo')).toMatch(
      /field examples\[0\]\.requests\[0\]\.body\.title: is missing from the example: the request the tool builds has "Milk"/,
    );
    const two = `${right}            # a second request the tool does not send
          - method: GET
            url: https://api.demo.example/lists/l1
`;
    expect(await generatorError(spec(two), 'demo')).toMatch(
      /field examples\[0\]\.requests: lists 2 request\(s\), but the tool builds 1 for this input: POST https:\/\/api\.demo\.example\/lists\/l1\/items\?limit=10/,
    );
  });
});
