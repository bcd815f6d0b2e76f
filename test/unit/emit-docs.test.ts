/** The connector docs are Markdown (not HTML-escaped) and show every example with every header really sent. */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { emitConnectorDoc, md } from '../../generator/emit-docs.ts';
import type { ConnectorSpec } from '../../core/spec-model.ts';

const spec: ConnectorSpec = {
  name: 'demo',
  title: 'Demo',
  description: "Reads the user's `pull_request` items (paths such as /items/<id>) & more.",
  provider: 'Demo API',
  auth: [{ kind: 'bearer', fields: [{ name: 'token', title: 'Token', secret: true }], apply: { bearer: '{token}' } }],
  api: { base_url: 'https://api.demo.example', headers: { 'X-Api-Version': '2026-01-01' } },
  tools: [
    {
      name: 'demo_send',
      title: 'Test tool demo_send',
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      output: { shape: {} },
      description: 'Sends `pull_request` events a <b>b</b> "quoted" way.',
      input: {
        labels: { type: 'array', items: { type: 'string' }, description: 'Labels, e.g. `a|b` or <none>.' },
        id: { type: 'string', required: true },
      },
      request: { method: 'POST', path: '/items/{id}', headers: { 'X-Trace': 'demo' }, body: { labels: '{labels}' } },
      examples: [
        {
          input: { id: '1', labels: ['x'] },
          requests: [
            {
              method: 'POST',
              url: 'https://api.demo.example/items/1',
              headers: { 'X-Trace': 'demo' },
              body: { labels: ['x'] },
            },
          ],
        },
        {
          title: 'Without labels.',
          input: { id: '2' },
          requests: [{ method: 'POST', url: 'https://api.demo.example/items/2', headers: { 'X-Trace': 'demo' } }],
        },
      ],
    },
  ],
};

describe('connector docs', () => {
  const doc = emitConnectorDoc(spec);

  it('are Markdown without HTML escaping: backticks, quotes and types print as written', () => {
    expect(doc).not.toMatch(/&#x|&lt;|&gt;|&quot;|&amp;/);
    expect(doc).toContain("Reads the user's `pull_request` items");
    expect(doc).toContain('Sends `pull_request` events');
    expect(doc).toContain('| `labels` | `array<string>` |');
  });

  it('escape what Markdown would read as HTML, outside code spans, and pipes in table cells', () => {
    expect(doc).toContain('(paths such as /items/\\<id>) & more.');
    expect(doc).toContain('a \\<b>b\\</b> "quoted" way.');
    expect(doc).toContain('Labels, e.g. `a\\|b` or \\<none>.');
    expect(md('`<x>` and <y> &amp; &')).toBe('`<x>` and \\<y> \\&amp; &');
  });

  it("show every example, each request with the connector's headers, the user agent and the credentials", () => {
    expect(doc).toContain('**Example 1.** Input:');
    expect(doc).toContain('**Example 2: Without labels.** Input:');
    const requests = [...doc.matchAll(/```http\n([\s\S]*?)```/g)].map((m) => m[1]);
    expect(requests).toEqual([
      [
        'POST https://api.demo.example/items/1',
        'accept: application/json',
        'user-agent: agent-connector-service/0.1',
        'x-api-version: 2026-01-01',
        'x-trace: demo',
        'authorization: Bearer [REDACTED]',
        'content-type: application/json',
        '',
        '{\n  "labels": [\n    "x"\n  ]\n}\n',
      ].join('\n'),
      [
        'POST https://api.demo.example/items/2',
        'accept: application/json',
        'user-agent: agent-connector-service/0.1',
        'x-api-version: 2026-01-01',
        'x-trace: demo',
        'authorization: Bearer [REDACTED]',
        '',
      ].join('\n'),
    ]);
  });

  it('of the real connectors carry no HTML entity', () => {
    for (const f of readdirSync('generated/docs').filter((n) => n.endsWith('.md'))) {
      expect(readFileSync(`generated/docs/${f}`, 'utf8'), f).not.toMatch(/&#x[0-9a-f]+;|&lt;|&gt;|&quot;|&amp;/i);
    }
  });
});
