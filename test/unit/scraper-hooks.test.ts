/** The scraper connector's hooks: their pure pieces, and the bounded run polling against a scripted platform. */
import { describe, expect, it } from 'vitest';
import {
  cleanEmpty,
  currentPricing,
  detailParts,
  fetchPlatformDocs,
  MAX_RUN_POLLS,
  mcpServerPath,
  mcpServerUrl,
  previewWithinLimit,
  splitActorTool,
  valuesByDotKeys,
  viewFields,
  waitForRun,
  withQuery,
} from '../../specs/hooks/scraper.ts';
import type { UpstreamRequest, UpstreamResponse } from '../../core/tool-types.ts';
import { ServiceError, UpstreamFailure } from '../../core/errors.ts';

const base = (host?: string) =>
  host === 'standby' ? 'https://apify.actor' : host ? `https://${host}.example` : 'https://api.apify.com';

describe('dataset items', () => {
  it('reads dotted fields into flat keys, missing paths as undefined', () => {
    const item = { crawl: { httpStatusCode: 200 }, metadata: { url: 'u' }, text: 't' };
    expect(valuesByDotKeys(item, ['crawl.httpStatusCode', 'metadata.title', 'text', 'crawl'])).toEqual({
      'crawl.httpStatusCode': 200,
      'metadata.title': undefined,
      text: 't',
      crawl: { httpStatusCode: 200 },
    });
    expect(valuesByDotKeys({ a: null }, ['a.b'])).toEqual({ 'a.b': undefined });
  });

  it('drops null, "", [] and {} recursively, and items left empty', () => {
    expect(cleanEmpty({ a: '', b: null, c: [], d: {}, e: { f: [null, ''], g: 0, h: false }, i: [1, {}, 'x'] })).toEqual(
      { e: { g: 0, h: false }, i: [1, 'x'] },
    );
    expect(cleanEmpty({ a: { b: { c: '' } } })).toBeUndefined();
    expect(cleanEmpty({ 'metadata.title': undefined })).toBeUndefined();
  });

  it('keeps a preview within the character limit: all fields, then the view fields, then fewer items', () => {
    const items = Array.from({ length: 10 }, (_, i) => ({ url: `u${i}`, text: `t${i}`, body: 'x'.repeat(100) }));
    expect(previewWithinLimit(items, ['url'], 10_000)).toEqual(items);
    expect(previewWithinLimit(items, ['url', 'text'], 500)).toEqual(items.map(({ url, text }) => ({ url, text })));
    const fewer = previewWithinLimit(items, ['url', 'text'], 100);
    expect(fewer).toEqual(items.slice(0, fewer.length).map(({ url, text }) => ({ url, text })));
    expect(fewer.length).toBeGreaterThan(0);
    expect(JSON.stringify(fewer).length).toBeLessThanOrEqual(100);
    expect(JSON.stringify(previewWithinLimit(items, [], 300)).length).toBeLessThanOrEqual(300);
  });

  it('collects the fields of the dataset views', () => {
    const build = {
      actorDefinition: {
        storages: {
          dataset: {
            views: {
              a: { display: { properties: { url: {}, title: {} } } },
              b: { transformation: { fields: ['title', 'price', 7] } },
            },
          },
        },
      },
    };
    expect(viewFields(build)).toEqual(['url', 'title', 'price']);
    expect(viewFields({ actorDefinition: null })).toEqual([]);
  });
});

describe('request shaping', () => {
  it('sets a query parameter in place or appends it, encoded as the templates encode', () => {
    expect(withQuery('https://x/v2/store?search=a%20b&limit=5&offset=0', 'limit', 55)).toBe(
      'https://x/v2/store?search=a%20b&limit=55&offset=0',
    );
    expect(withQuery('https://x/items?offset=0', 'fields', 'a,b c')).toBe('https://x/items?offset=0&fields=a,b%20c');
    expect(withQuery('https://x/items', 'limit', 1)).toBe('https://x/items?limit=1');
  });

  it('splits actorName:toolName at the last colon', () => {
    expect(splitActorTool('apify/x')).toEqual({ name: 'apify/x' });
    expect(splitActorTool('apify/x:search')).toEqual({ name: 'apify/x', tool: 'search' });
  });

  it('reads docs pages as Markdown from the host of the URL, without fragment or trailing slash', () => {
    const planned: UpstreamRequest[] = [
      {
        method: 'GET',
        url: 'https://platform_docs.example/',
        headers: { accept: 'text/markdown' },
        host: 'platform_docs',
        anonymous: true,
      },
    ];
    const plan = (url: string) => fetchPlatformDocs.plan!({ url }, planned, base)[0]!;
    expect(plan('https://docs.apify.com/platform/actors#x')).toMatchObject({
      url: 'https://platform_docs.example/platform/actors.md',
      host: 'platform_docs',
      anonymous: true,
    });
    expect(plan('https://crawlee.dev/python/docs/')).toMatchObject({
      url: 'https://crawler_docs.example/python/docs.md',
      host: 'crawler_docs',
    });
    expect(plan('https://crawlee.dev/llms.md').url).toBe('https://crawler_docs.example/llms.md');
  });
});

describe('MCP-server Actors', () => {
  it('takes the declared MCP path, preferring /mcp', () => {
    const def = (webServerMcpPath?: string) => ({ actorDefinition: { webServerMcpPath } });
    expect(mcpServerPath(def())).toBeUndefined();
    expect(mcpServerPath(def('/sse, /mcp'))).toBe('/mcp');
    expect(mcpServerPath(def('/sse'))).toBe('/sse');
  });

  it('refuses an MCP path that would send the token to another host', () => {
    for (const evil of [
      '@evil.example/mcp',
      '//evil.example/mcp',
      'https://evil.example/mcp',
      '/mcp@evil.example',
      '/mcp?x=1',
    ]) {
      expect(() => mcpServerPath({ actorDefinition: { webServerMcpPath: evil } }), evil).toThrow(UpstreamFailure);
    }
  });

  it('puts the Actor on its own Standby host', () => {
    expect(mcpServerUrl(base, 'aYG0l9s7dbB7j3gbS', '/mcp')).toBe('https://aYG0l9s7dbB7j3gbS.apify.actor/mcp');
    expect(mcpServerUrl(() => 'http://localhost:8123', 'abc', '/mcp')).toBe('http://abc.localhost:8123/mcp');
    for (const bad of [undefined, 'apify~x', 'a.evil.example', 'a/b'])
      expect(() => mcpServerUrl(base, bad, '/mcp')).toThrow(UpstreamFailure);
  });
});

describe('Actor details', () => {
  it('returns everything but mcpTools when output is omitted, else only the flags set to true', () => {
    const all = {
      description: true,
      stats: true,
      pricing: true,
      rating: true,
      metadata: true,
      inputSchema: true,
      readme: true,
      outputSchema: true,
      mcpTools: false,
    };
    expect(detailParts(undefined)).toEqual(all);
    expect(detailParts({})).toEqual(all);
    expect(detailParts({ inputSchema: true })).toEqual({
      ...Object.fromEntries(Object.keys(all).map((k) => [k, false])),
      inputSchema: true,
    });
    expect(detailParts({ mcpTools: true, readme: false }).mcpTools).toBe(true);
    expect(detailParts({ mcpTools: true, readme: false }).readme).toBe(false);
  });

  it('picks the pricing in force, not one scheduled for later', () => {
    const now = Date.parse('2026-06-01T00:00:00Z');
    const infos = [
      { pricingModel: 'FREE', startedAt: '2023-01-01T00:00:00Z' },
      { pricingModel: 'PAY_PER_EVENT', startedAt: '2025-01-01T00:00:00Z' },
      { pricingModel: 'FLAT_PRICE_PER_MONTH', startedAt: '2027-01-01T00:00:00Z' },
    ];
    expect(currentPricing(infos, now)).toEqual(infos[1]);
    expect(currentPricing([], now)).toBeNull();
    expect(currentPricing(undefined, now)).toBeNull();
  });
});

describe('waiting for a run', () => {
  /** A platform whose run reads answer the given statuses in turn (the last one repeats). */
  function platform(statuses: string[]) {
    const urls: string[] = [];
    const ctx = {
      base,
      send: (): Promise<UpstreamResponse> => Promise.reject(new Error('not used')),
      call: (r: UpstreamRequest) => {
        urls.push(r.url);
        return Promise.resolve({
          data: { id: 'r1', status: statuses[Math.min(urls.length - 1, statuses.length - 1)], defaultDatasetId: 'd1' },
        });
      },
    };
    return { ctx, urls };
  }

  it('does not poll a run that is already terminal', async () => {
    const { ctx, urls } = platform([]);
    expect((await waitForRun(ctx, { id: 'r1', status: 'SUCCEEDED' }, 'a/b')).status).toBe('SUCCEEDED');
    expect(urls).toEqual([]);
  });

  it('polls with waitForFinish=60 until a terminal status', async () => {
    const { ctx, urls } = platform(['RUNNING', 'TIMING-OUT', 'TIMED-OUT']);
    expect((await waitForRun(ctx, { id: 'r1', status: 'READY' }, 'a/b')).status).toBe('TIMED-OUT');
    expect(urls).toEqual(Array(3).fill('https://api.apify.com/v2/actor-runs/r1?waitForFinish=60'));
  });

  it(`gives up after ${MAX_RUN_POLLS} polls with a 504 that carries the run`, async () => {
    const { ctx, urls } = platform(['RUNNING']);
    const e = await waitForRun(ctx, { id: 'r1', status: 'READY' }, 'a/b').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ServiceError);
    expect(e).toMatchObject({
      status: 504,
      code: 'actor_run_not_finished',
      details: { runId: 'r1', datasetId: 'd1', status: 'RUNNING' },
    });
    expect(urls).toHaveLength(MAX_RUN_POLLS);
  });
});
