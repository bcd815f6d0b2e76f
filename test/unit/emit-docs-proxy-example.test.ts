/** The connector doc's proxy example names a path on the proxy root, never one of a request sent to another host. */
import { describe, expect, it } from 'vitest';
import { emitConnectorDoc } from '../../generator/emit-docs.ts';
import type { ConnectorSpec } from '../../core/spec-model.ts';

const connector = (tools: ConnectorSpec['tools']): ConnectorSpec => ({
  name: 'demo',
  title: 'Demo',
  description: 'Demo connector',
  provider: 'Demo API',
  auth: [
    {
      kind: 'api_key',
      fields: [{ name: 'api_key', title: 'Key', secret: true }],
      apply: { headers: { 'X-API-Key': '{api_key}' } },
    },
  ],
  api: { base_url: 'https://api.demo.example', hosts: { other: 'https://other.example' } },
  tools,
});
const example = [{ input: {}, requests: [{ method: 'GET', url: 'https://x.example/' }] }];

describe('proxy example in connector docs', () => {
  it('skips tools whose request goes to another host', () => {
    const doc = emitConnectorDoc(
      connector([
        {
          name: 'demo_a',
          description: 'A',
          input: {},
          request: { host: 'other', method: 'POST', path: '/v2/elsewhere' },
          examples: example,
        },
        {
          name: 'demo_b',
          description: 'B',
          input: {},
          requests: [
            { host: 'other', method: 'GET', path: '/v2/also-elsewhere' },
            { method: 'GET', path: '/items/{id}' },
          ],
          examples: example,
        },
      ]),
    );
    expect(doc).toContain('a proxy path such as `/items/123` goes to `https://api.demo.example/items/123`');
    expect(doc).not.toContain('`https://api.demo.example/v2/elsewhere`');
  });

  it('falls back to / when no tool uses the proxy root', () => {
    const doc = emitConnectorDoc(
      connector([
        {
          name: 'demo_a',
          description: 'A',
          input: {},
          request: { host: 'other', method: 'GET', path: '/x' },
          examples: example,
        },
      ]),
    );
    expect(doc).toContain('a proxy path such as `/` goes to `https://api.demo.example/`');
  });
});
