/**
 * The connector doc's proxy example is a real example's path on the proxy root (its values, not placeholders),
 * never one of a request sent to another host.
 */
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

describe('proxy example in connector docs', () => {
  it("takes the first example on the API root, with the example's values for every path parameter", () => {
    const doc = emitConnectorDoc(
      connector([
        {
          name: 'demo_a',
          title: 'Test tool demo_a',
          annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
          output: { shape: {} },
          description: 'A',
          input: {},
          request: { host: 'other', method: 'POST', path: '/v2/elsewhere' },
          examples: [{ input: {}, requests: [{ method: 'POST', url: 'https://other.example/v2/elsewhere' }] }],
        },
        {
          name: 'demo_b',
          title: 'Test tool demo_b',
          annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
          output: { shape: {} },
          description: 'B',
          input: { owner: { type: 'string', required: true }, repo: { type: 'string', required: true } },
          requests: [
            { host: 'other', method: 'GET', path: '/v2/also-elsewhere' },
            { method: 'GET', path: '/repos/{owner}/{repo}/issues' },
          ],
          examples: [
            {
              input: { owner: 'octo', repo: 'hello' },
              requests: [
                { method: 'GET', url: 'https://other.example/v2/also-elsewhere' },
                { method: 'GET', url: 'https://api.demo.example/repos/octo/hello/issues' },
              ],
            },
          ],
        },
      ]),
    );
    expect(doc).toContain(
      'a proxy path such as `/repos/octo/hello/issues` goes to `https://api.demo.example/repos/octo/hello/issues`',
    );
    expect(doc).not.toContain('/123');
  });

  it('falls back to / when no tool uses the proxy root', () => {
    const doc = emitConnectorDoc(
      connector([
        {
          name: 'demo_a',
          title: 'Test tool demo_a',
          annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
          output: { shape: {} },
          description: 'A',
          input: {},
          request: { host: 'other', method: 'GET', path: '/x' },
          examples: [{ input: {}, requests: [{ method: 'GET', url: 'https://other.example/x' }] }],
        },
      ]),
    );
    expect(doc).toContain('a proxy path such as `/` goes to `https://api.demo.example/`');
  });
});
