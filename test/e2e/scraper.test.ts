/**
 * The scraping-platform connector end to end: client library → service → fake platform (API, Standby MCP
 * servers, docs search, docs sites), for every tool, the spec's run workflow (synchronous and asynchronous),
 * the limits, dry runs, the proxy and the errors a client meets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ACTORS,
  CRAWLER_DOCS_APP,
  FakeApify,
  PLATFORM_DOCS_APP,
  routeLocalhostSubdomains,
  seedCatalogue,
  type ReceivedRequest,
} from '../fakes/apify.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { AnswerLog } from '../helpers/answer-check.ts';
import { failure, requestsDuring, toolRunner } from '../helpers/tools.ts';
import { tools } from '../../generated/registry.ts';
import { MAX_RUN_POLLS, WAIT_FOR_FINISH_SECS } from '../../specs/hooks/scraper.ts';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

let h: Harness;
let fake: FakeApify;
let restoreDns: () => void;
const TOKEN = 'apify_api_Zt9mQk2LwX7vB4nR8sYc';
const who = { connectionName: 'scraper', identifier: 'user-1' };
const executed = new Set<string>();

type Data = Record<string, any>;

// The upstream mapping is checked against the provider's own answer (response_format detailed); the concise
// answers are checked against the tool's declared output (test/helpers/answer-check.ts).
const answers = new AnswerLog('scraper', () => h);
const run = toolRunner<Data>({ harness: () => h, who, executed, responseFormat: 'detailed', answers });

/** The requests the fake received while `fn` ran. */
const during = (fn: () => Promise<unknown>): Promise<ReceivedRequest[]> => requestsDuring(() => fake.requests, fn);

beforeAll(async () => {
  restoreDns = routeLocalhostSubdomains();
  h = await startHarness();
  fake = await new FakeApify().start();
  seedCatalogue(fake);
  fake.addToken(TOKEN);
  await h.client.createConnection({
    connection_name: 'scraper',
    connector: 'scraper',
    api_base_url: fake.url,
    api_hosts: fake.hosts,
  });
  await h.client.upsertConnectedAccount({
    ...who,
    credentials: { token: TOKEN },
  });
});
afterAll(async () => {
  answers.write();
  await fake?.close();
  await h?.close();
  restoreDns?.();
});

describe('run workflow', () => {
  it('synchronous: details with the input schema, a run with matching input, then the full output', async () => {
    const details = await run('scraper_fetch_actor_details', {
      actor: 'apify/website-content-crawler',
      output: { inputSchema: true },
    });
    expect(Object.keys(details).sort()).toEqual(['actor', 'inputSchema']);
    expect(details.actor).toMatchObject({ id: ACTORS.crawler, fullName: 'apify/website-content-crawler' });
    const schema = details.inputSchema as { required: string[]; properties: Record<string, Record<string, unknown>> };
    expect(schema.required).toEqual(['startUrls']);
    // Only what an agent needs: editor hints go, long descriptions are cut at 500 characters.
    expect(schema.properties.startUrls).not.toHaveProperty('editor');
    expect(String(schema.properties.startUrls!.description).length).toBe(501);
    expect(schema.properties.startUrls!.prefill).toEqual([{ url: 'https://docs.apify.com' }]);

    // An input built from the schema: its required field, plus one optional one.
    const input = { startUrls: [{ url: 'https://example.com' }], maxCrawlPages: 3 };
    const sent = await during(async () => {
      const result = await run('scraper_call_actor', { actor: 'apify/website-content-crawler', input });
      expect(result).toMatchObject({
        actorName: 'apify/website-content-crawler',
        status: 'SUCCEEDED',
        totalItemCount: 3,
        previewItemCount: 3,
      });
      expect(result.items.map((i: Data) => i.url)).toEqual([
        'https://example.com',
        'https://example.com/page-1',
        'https://example.com/page-2',
      ]);
      expect(result.datasetId).toMatch(/^ds/);
      expect(result.instructions).toContain(result.datasetId);

      const output = await run('scraper_get_actor_output', {
        datasetId: result.datasetId,
        fields: 'url, crawl.httpStatusCode, metadata.description',
      });
      expect(output).toMatchObject({
        datasetId: result.datasetId,
        itemCount: 3,
        totalItemCount: 3,
        offset: 0,
        limit: 100,
      });
      // Dotted fields come back as flat keys; the empty description is cleaned away.
      expect(output.items).toEqual([
        { url: 'https://example.com', 'crawl.httpStatusCode': 200 },
        { url: 'https://example.com/page-1', 'crawl.httpStatusCode': 200 },
        { url: 'https://example.com/page-2', 'crawl.httpStatusCode': 404 },
      ]);
    });
    const path = `/v2/acts/apify~website-content-crawler`;
    expect(sent.map((r) => `${r.method} ${r.path}`)).toEqual([
      `GET ${path}/builds/default`,
      `POST ${path}/runs`,
      expect.stringMatching(/^GET \/v2\/actor-runs\/run\w+$/),
      expect.stringMatching(/^GET \/v2\/actor-runs\/run\w+$/),
      expect.stringMatching(/^GET \/v2\/datasets\/ds\w+\/items$/),
      expect.stringMatching(/^GET \/v2\/datasets\/ds\w+\/items$/),
    ]);
    const start = sent.find((r) => r.method === 'POST')!;
    expect(start.body).toEqual(input);
    expect(start.headers.authorization).toBe(`Bearer ${TOKEN}`);
    for (const poll of sent.filter((r) => r.path.startsWith('/v2/actor-runs/')))
      expect(poll.query).toEqual({ waitForFinish: String(WAIT_FOR_FINISH_SECS) });
    const [preview, full] = sent.filter((r) => r.path.endsWith('/items'));
    expect(preview!.query).toEqual({ limit: '100' });
    // A dotted field is projected locally: the API gets no `fields`.
    expect(full!.query).toEqual({ offset: '0', limit: '100', clean: 'true' });

    const topLevel = await during(async () => {
      const output = await run('scraper_get_actor_output', {
        datasetId: lastRun().defaultDatasetId,
        fields: 'url,text',
        limit: 2,
        offset: 1,
      });
      expect(output.items).toEqual([
        { url: 'https://example.com/page-1', text: 'Text of page 1' },
        { url: 'https://example.com/page-2', text: 'Text of page 2' },
      ]);
    });
    expect(topLevel[0]!.query).toEqual({ offset: '1', limit: '2', clean: 'true', fields: 'url,text' });
  });

  it('asynchronous: a runId at once, scraper_get_actor_run polled until SUCCEEDED, then the output', async () => {
    const started = await run('scraper_call_actor', {
      actor: 'apify/website-content-crawler',
      input: { startUrls: [{ url: 'https://async.example' }], maxCrawlPages: 2 },
      async: true,
      callOptions: { memory: 1024, timeout: 60 },
    });
    expect(started).toMatchObject({
      actorName: 'apify/website-content-crawler',
      status: 'READY',
      input: { maxCrawlPages: 2 },
    });
    expect(started.runId).toMatch(/^run/);
    expect(fake.sent('GET', new RegExp(`/v2/actor-runs/${started.runId}$`))).toHaveLength(0);
    expect(fake.sent('POST', /\/runs$/).at(-1)!.query).toEqual({ memory: '1024', timeout: '60' });

    const statuses: string[] = [];
    let current: Data = {};
    for (let poll = 0; poll < 10 && current.status !== 'SUCCEEDED'; poll++) {
      current = await run('scraper_get_actor_run', { runId: started.runId });
      statuses.push(current.status);
    }
    expect(statuses).toEqual(['RUNNING', 'SUCCEEDED']);
    expect(current).toMatchObject({
      runId: started.runId,
      actorId: ACTORS.crawler,
      actorName: 'apify/website-content-crawler',
      datasetId: started.datasetId,
      keyValueStoreId: started.keyValueStoreId,
      requestQueueId: expect.stringMatching(/^rq/),
      dataset: { datasetId: started.datasetId, totalItemCount: 2, previewItemCount: 2 },
    });
    expect(current.finishedAt).toBeTruthy();

    const output = await run('scraper_get_actor_output', { datasetId: current.datasetId });
    expect(output.items.map((i: Data) => i.url)).toEqual(['https://async.example', 'https://async.example/page-1']);
    // `clean=true`: hidden fields (#debug) never come back.
    expect(output.items.every((i: Data) => !('#debug' in i))).toBe(true);
  });
});

function lastRun() {
  return [...fake.runs.values()].at(-1)!;
}

describe('scraper_call_actor', () => {
  it('with previewOutput false returns no items but the run, the dataset and its item count', async () => {
    const sent = await during(async () => {
      const result = await run('scraper_call_actor', {
        actor: ACTORS.crawler,
        input: { startUrls: [{ url: 'https://np.example' }], maxCrawlPages: 4 },
        previewOutput: false,
      });
      expect(result).toMatchObject({ status: 'SUCCEEDED', items: [], previewItemCount: 0, totalItemCount: 4 });
      expect(result.datasetId).toBe(lastRun().defaultDatasetId);
      expect(result.runId).toBe(lastRun().id);
    });
    expect(sent.filter((r) => r.path.endsWith('/items'))).toHaveLength(0);
    expect(sent.at(-1)!.path).toMatch(/^\/v2\/datasets\/ds\w+$/);
  });

  it('trims a large preview to the fields the dataset views show', async () => {
    const result = await run('scraper_call_actor', {
      actor: 'apify/website-content-crawler',
      input: { startUrls: [{ url: 'https://big.example' }], maxCrawlPages: 40, bigPages: true },
    });
    expect(result.totalItemCount).toBe(40);
    expect(result.previewItemCount).toBe(40);
    expect(Object.keys(result.items[0]).sort()).toEqual(['text', 'url']);
    expect(JSON.stringify(result.items).length).toBeLessThanOrEqual(50_000);
  });

  it('stops waiting after a bounded number of polls and says how to go on', async () => {
    const before = fake.requests.length;
    const e = await failure(run('scraper_call_actor', { actor: 'acme/slow-crawler', input: {} }));
    expect(e.status).toBe(504);
    expect(e.code).toBe('actor_run_not_finished');
    const slow = lastRun();
    expect(e.message).toContain(slow.id);
    expect(e.message).toContain('scraper_get_actor_run');
    expect(e.details as unknown).toEqual({ runId: slow.id, datasetId: slow.defaultDatasetId, status: 'RUNNING' });
    expect(fake.requests.slice(before).filter((r) => r.path === `/v2/actor-runs/${slow.id}`)).toHaveLength(
      MAX_RUN_POLLS,
    );
    // The run is left running, not aborted: the caller can go on with it.
    expect(fake.requests.slice(before).some((r) => r.path.endsWith('/abort'))).toBe(false);
  });

  it('returns a failed run with its status and partial output instead of hiding it', async () => {
    const result = await run('scraper_call_actor', { actor: 'acme/flaky-scraper', input: {} });
    expect(result).toMatchObject({
      status: 'FAILED',
      statusMessage: 'The Actor process exited with code 1',
      totalItemCount: 1,
    });
    expect(result.items).toEqual([{ url: 'https://example.com', partial: true }]);
  });

  it('passes the platform input validation error through and starts nothing', async () => {
    const runs = fake.runs.size;
    const e = await failure(
      run('scraper_call_actor', { actor: 'apify/website-content-crawler', input: { maxCrawlPages: 2 } }),
    );
    expect(e.status).toBe(400);
    expect(e.isProviderError).toBe(true);
    expect(e.providerBody).toEqual({
      error: { type: 'invalid-input', message: 'Input is not valid: Field input.startUrls is required' },
    });
    expect(fake.runs.size).toBe(runs);
  });

  it('calls one tool of an MCP-server Actor with actorName:toolName over Streamable HTTP', async () => {
    const runs = fake.runs.size;
    const sent = await during(async () => {
      const result = await run('scraper_call_actor', {
        actor: 'acme/weather-mcp-server:get_current_weather',
        input: { city: 'Prague' },
      });
      expect(result).toMatchObject({
        actor: 'acme/weather-mcp-server',
        tool: 'get_current_weather',
        content: [{ type: 'text', text: 'Weather in Prague: 21 °C, clear' }],
      });
    });
    expect(fake.runs.size).toBe(runs);
    const mcp = sent.filter((r) => r.host.startsWith(`${ACTORS.weatherMcp.toLowerCase()}.localhost:`));
    expect(mcp.map((r) => (r.body as { method: string }).method)).toEqual([
      'initialize',
      'notifications/initialized',
      'tools/call',
    ]);
    // The declared paths are "/sse, /mcp": Streamable HTTP at /mcp is preferred, with the account's token.
    expect(
      mcp.every((r) => r.method === 'POST' && r.path === '/mcp' && r.headers.authorization === `Bearer ${TOKEN}`),
    ).toBe(true);
    expect((mcp[2]!.body as { params: unknown }).params).toEqual({
      name: 'get_current_weather',
      arguments: { city: 'Prague' },
    });
    // The client offered its latest protocol version; the Actor answered with an older one it speaks, which every
    // later request of the session names.
    expect((mcp[0]!.body as { params: { protocolVersion: string } }).params.protocolVersion).toBe(
      LATEST_PROTOCOL_VERSION,
    );
    expect(mcp.slice(1).map((r) => r.headers['mcp-protocol-version'])).toEqual(['2025-06-18', '2025-06-18']);
    expect(mcp.slice(1).map((r) => r.headers['mcp-session-id'])).toEqual([
      expect.stringMatching(/^sess-/),
      mcp[1]!.headers['mcp-session-id'],
    ]);

    const unknown = await failure(
      run('scraper_call_actor', { actor: 'acme/weather-mcp-server:get_forecast', input: {} }),
    );
    expect(unknown.status).toBe(400);
    expect(unknown.isProviderError).toBe(true);
  });

  it('refuses actorName:toolName for a plain Actor, and a bare MCP-server Actor, naming the field', async () => {
    const plain = await failure(run('scraper_call_actor', { actor: 'apify/website-content-crawler:crawl', input: {} }));
    expect(plain.status).toBe(400);
    expect(plain.details[0]).toMatchObject({ field: 'actor' });
    expect(plain.details[0]!.message).toContain('not an MCP server');
    const bare = await failure(run('scraper_call_actor', { actor: 'acme/weather-mcp-server', input: {} }));
    expect(bare.status).toBe(400);
    expect(bare.details[0]!.message).toContain('acme/weather-mcp-server:toolName');
  });
});

describe('scraper_fetch_actor_details', () => {
  it('returns every part but mcpTools by default', async () => {
    const sent = await during(async () => {
      const d = await run('scraper_fetch_actor_details', { actor: 'apify/website-content-crawler' });
      expect(Object.keys(d).sort()).toEqual([
        'actor',
        'description',
        'inputSchema',
        'metadata',
        'outputSchema',
        'pricing',
        'rating',
        'readme',
        'stats',
      ]);
      expect(d.actor).toEqual({
        id: ACTORS.crawler,
        fullName: 'apify/website-content-crawler',
        title: 'Website Content Crawler',
        url: 'https://apify.com/apify/website-content-crawler',
      });
      expect(d.description).toBe('Crawl websites and extract text content to feed AI models.');
      expect(d.stats).toEqual({ totalUsers: 50000, monthlyUsers: 10000, successRate: 96, bookmarks: 42 });
      // The pricing in force today, not the one scheduled for later.
      expect(d.pricing).toMatchObject({ pricingModel: 'PAY_PER_EVENT', startedAt: '2025-01-01T00:00:00.000Z' });
      expect(d.rating).toEqual({ average: 4.57, count: 17 });
      expect(d.metadata).toMatchObject({
        developer: 'apify',
        isOfficial: true,
        categories: ['AI', 'DEVELOPER_TOOLS'],
        pictureUrl: `https://images.apifyusercontent.com/${ACTORS.crawler}.png`,
      });
      expect(d.readme).toBe('Crawls a website and returns the text of every page.');
      expect(d.outputSchema.views.overview.transformation.fields).toEqual(['url', 'text']);
    });
    expect(sent.map((r) => `${r.method} ${r.path}`).sort()).toEqual([
      'GET /v2/acts/apify~website-content-crawler',
      'GET /v2/acts/apify~website-content-crawler/builds/default',
      'GET /v2/store',
    ]);
    expect(sent.find((r) => r.path === '/v2/store')!.query).toEqual({ search: 'website-content-crawler', limit: '5' });
  });

  it('lists the tools of an MCP-server Actor, and says when an Actor is not one', async () => {
    const d = await run('scraper_fetch_actor_details', {
      actor: 'acme/weather-mcp-server',
      output: { mcpTools: true },
    });
    expect(d.mcpTools).toEqual({
      isMcpServer: true,
      callAs: 'acme/weather-mcp-server:{toolName}',
      tools: [
        {
          name: 'get_current_weather',
          description: 'Current weather of a city.',
          inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      ],
    });
    const plain = await run('scraper_fetch_actor_details', {
      actor: ACTORS.rag,
      output: { mcpTools: true, readme: true },
    });
    expect(plain.mcpTools).toMatchObject({ isMcpServer: false });
    expect(plain.readme).toBe('# RAG Web Browser');
    expect(plain.actor.fullName).toBe('apify/rag-web-browser');
  });

  it('is the platform 404 for an Actor that does not exist', async () => {
    const e = await failure(run('scraper_fetch_actor_details', { actor: 'nobody/nothing' }));
    expect(e.status).toBe(404);
    expect(e.providerBody).toEqual({ error: { type: 'record-not-found', message: 'Actor was not found' } });
  });
});

describe('scraper_search_actors', () => {
  it('drops rental Actors and still returns `limit` of them, over-fetching by 50', async () => {
    const sent = await during(async () => {
      const found = await run('scraper_search_actors', { keywords: 'instagram', limit: 2 });
      expect(found.actors.map((a: Data) => `${a.username}/${a.name}`)).toEqual([
        'apify/instagram-scraper',
        'apify/instagram-post-scraper',
      ]);
      expect(found).toMatchObject({ query: 'instagram', count: 2, offset: 0, limit: 2 });
    });
    expect(sent[0]!.query).toEqual({ search: 'instagram', limit: '52', offset: '0' });
  });

  it('returns popular Actors for no keywords, five by default, and pages with offset', async () => {
    const popular = await run('scraper_search_actors', {});
    expect(popular.actors).toHaveLength(5);
    expect(popular.actors[0].name).toBe('website-content-crawler');
    const next = await run('scraper_search_actors', { offset: 5, limit: 100 });
    expect(next.actors.map((a: Data) => a.name)).not.toContain('website-content-crawler');
    expect(next.actors.every((a: Data) => a.currentPricingInfo.pricingModel !== 'FLAT_PRICE_PER_MONTH')).toBe(true);
  });
});

describe('scraper_rag_web_browser', () => {
  it('runs the RAG web browser with the defaults, memory capped at 4096 MB', async () => {
    const sent = await during(async () => {
      const result = await run('scraper_rag_web_browser', { query: 'web scraping' });
      expect(result).toMatchObject({ status: 'SUCCEEDED', totalItemCount: 3 });
      expect(result.items.map((i: Data) => i.markdown)).toEqual(['# Result 0', '# Result 1', '# Result 2']);
    });
    const start = sent.find((r) => r.method === 'POST')!;
    expect(start.path).toBe('/v2/acts/apify~rag-web-browser/runs');
    expect(start.query).toEqual({ memory: '4096' });
    expect(start.body).toEqual({ query: 'web scraping', maxResults: 3, outputFormats: ['markdown'] });
  });

  it('passes maxResults and outputFormats', async () => {
    const result = await run('scraper_rag_web_browser', {
      query: 'apify',
      maxResults: 2,
      outputFormats: ['text', 'html'],
    });
    expect(result.items).toHaveLength(2);
    expect(Object.keys(result.items[0]).sort()).toEqual(['crawl', 'html', 'metadata', 'searchResult', 'text']);
    const url = await run('scraper_rag_web_browser', { query: 'https://example.org/page' });
    expect(url.items.map((i: Data) => i.metadata.url)).toEqual(['https://example.org/page']);
  });
});

describe('docs tools (no platform credentials)', () => {
  it('searches the platform docs by default, translating the source and sending the window', async () => {
    const sent = await during(async () => {
      const found = await run('scraper_search_platform_docs', { query: 'input schema', limit: 2 });
      const hits = found.results[0].hits as Data[];
      expect(hits.map((x) => x.url)).toEqual([
        'https://docs.apify.com/platform/actors/development/actor-definition/input-schema',
        'https://docs.apify.com/platform/actors/running/input-and-output#input',
      ]);
      expect(found.results[0].nbHits).toBe(3);
      expect(Object.keys(hits[0]!).sort()).toEqual(['content', 'hierarchy', 'objectID', 'url']);
    });
    expect(sent).toHaveLength(1);
    expect(sent[0]!.path).toBe(`/algolia/${PLATFORM_DOCS_APP}/1/indexes/*/queries`);
    expect(sent[0]!.headers.authorization).toBeUndefined();
    expect(sent[0]!.headers['x-algolia-application-id']).toBe(PLATFORM_DOCS_APP);
    expect(JSON.stringify(sent[0])).not.toContain(TOKEN);
  });

  it('searches the crawler docs for JS and Python, with offset', async () => {
    const js = await run('scraper_search_platform_docs', { query: 'request queue', docSource: 'crawler-js' });
    expect(js.results[0].hits.map((x: Data) => x.url)).toEqual(['https://crawlee.dev/js/docs/guides/request-queue']);
    const py = await run('scraper_search_platform_docs', {
      query: 'request queue',
      docSource: 'crawler-py',
      offset: 1,
      limit: 1,
    });
    expect(py.results[0].hits.map((x: Data) => x.url)).toEqual([
      'https://crawlee.dev/python/docs/guides/request-loaders',
    ]);
    expect(py.results[0].nbHits).toBe(3);
    expect(fake.requests.at(-1)!.path).toBe(`/algolia/${CRAWLER_DOCS_APP}/1/indexes/*/queries`);
  });

  it('searches the docs with the published search-only keys, never with the account token', async () => {
    const sent = await during(() => run('scraper_search_platform_docs', { query: 'dataset', docSource: 'crawler-py' }));
    expect(sent[0]!.headers['x-algolia-api-key']).toBe('878493fcd7001e3c179b6db6796a999b');
    expect(sent[0]!.headers.authorization).toBeUndefined();
    expect(JSON.stringify(sent)).not.toContain(TOKEN);
  });

  it('fetches a docs page as Markdown from either site, without the fragment and without credentials', async () => {
    const sent = await during(async () => {
      const page = await run('scraper_fetch_platform_docs', {
        url: 'https://docs.apify.com/platform/actors/running#start',
      });
      expect(page).toEqual({
        url: 'https://docs.apify.com/platform/actors/running',
        content: '# Running Actors\n\nStart an Actor from Console or the API.',
      });
      const crawler = await run('scraper_fetch_platform_docs', { url: 'https://crawlee.dev/js/docs/quick-start/' });
      expect(crawler.content).toContain('PlaywrightCrawler');
    });
    expect(sent.map((r) => r.path)).toEqual([
      '/docs-site/platform/actors/running.md',
      '/crawlee-site/js/docs/quick-start.md',
    ]);
    expect(sent.every((r) => r.headers.authorization === undefined)).toBe(true);
    const missing = await failure(run('scraper_fetch_platform_docs', { url: 'https://docs.apify.com/no/such/page' }));
    expect(missing.status).toBe(404);
    expect(missing.isProviderError).toBe(true);
  });
});

describe('limits and bad input are 400s naming the field, before any upstream call', () => {
  const cases: Array<[string, Record<string, unknown>, string, string]> = [
    ['scraper_search_actors', { limit: 0 }, 'limit', 'must be at least 1'],
    ['scraper_search_actors', { limit: 101 }, 'limit', 'must be at most 100'],
    ['scraper_search_actors', { offset: -1 }, 'offset', 'must be at least 0'],
    ['scraper_search_actors', { limit: 2.5 }, 'limit', 'must be an integer'],
    ['scraper_search_platform_docs', { query: 'x', limit: 21 }, 'limit', 'must be at most 20'],
    ['scraper_search_platform_docs', { query: 'x', limit: 0 }, 'limit', 'must be at least 1'],
    [
      'scraper_search_platform_docs',
      { query: 'x', docSource: 'apify' },
      'docSource',
      'must be one of: platform, crawler-js, crawler-py',
    ],
    ['scraper_search_platform_docs', { query: '   ' }, 'query', 'must match the pattern \\S'],
    ['scraper_get_actor_output', { datasetId: 'abc', offset: -1 }, 'offset', 'must be at least 0'],
    ['scraper_get_actor_output', { datasetId: 'abc', limit: 0 }, 'limit', 'must be at least 1'],
    ['scraper_get_actor_output', { datasetId: 'abc', limit: 1.5 }, 'limit', 'must be a whole number'],
    ['scraper_rag_web_browser', { query: 'x', maxResults: 101 }, 'maxResults', 'must be at most 100'],
    ['scraper_rag_web_browser', { query: 'x', maxResults: 0 }, 'maxResults', 'must be at least 1'],
    [
      'scraper_rag_web_browser',
      { query: 'x', outputFormats: ['pdf'] },
      'outputFormats[0]',
      'must be one of: markdown, text, html',
    ],
    ['scraper_rag_web_browser', { maxResults: 3 }, 'query', 'is required'],
    [
      'scraper_call_actor',
      { actor: 'apify/x', input: {}, callOptions: { memory: 1000 } },
      'callOptions.memory',
      'must be one of: 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768',
    ],
    [
      'scraper_call_actor',
      { actor: 'apify/x', input: {}, callOptions: { timeout: -5 } },
      'callOptions.timeout',
      'must be at least 0',
    ],
    [
      'scraper_call_actor',
      { actor: 'apify/x', input: {}, callOptions: { build: 'beta' } },
      'callOptions.build',
      'is not an allowed field here',
    ],
    ['scraper_call_actor', { actor: 'apify/x' }, 'input', 'is required'],
    ['scraper_call_actor', { actor: 'apify/x', input: [1] }, 'input', 'must be an object'],
    [
      'scraper_fetch_actor_details',
      { actor: 'apify/x', output: { pictures: true } },
      'output.pictures',
      'is not an allowed field here',
    ],
    ['scraper_get_actor_run', {}, 'runId', 'is required'],
  ];
  it.each(cases)('%s %j → %s', async (tool, input, field, message) => {
    const before = fake.requests.length;
    const e = await failure(run(tool, input));
    expect(e.status).toBe(400);
    expect(e.code).toBe('invalid_input');
    expect(e.details).toContainEqual({ field, message });
    expect(fake.requests.length).toBe(before);
  });

  it('never lets scraper_fetch_platform_docs read another site', async () => {
    for (const url of [
      'https://evil.example/page',
      'https://docs.apify.com.evil.example/page',
      'https://docs.apify.com@evil.example/page',
      'http://docs.apify.com/platform',
      'https://crawlee.dev',
      'https://crawlee.dev//evil.example/x',
      'https://docs.apify.com/platform?x=1',
    ]) {
      const e = await failure(run('scraper_fetch_platform_docs', { url }));
      expect(e.status, url).toBe(400);
      expect(e.details[0]!.field).toBe('url');
    }
  });
});

describe('dry run', () => {
  it('shows the upstream requests of every scraper tool, the token redacted, the docs tools without it', async () => {
    const hostOf: Record<string, string> = {
      'https://api.apify.com': fake.url,
      'https://docs.apify.com': fake.hosts.platform_docs!,
      'https://crawlee.dev': fake.hosts.crawler_docs!,
      // URL origins are lower-case.
      [`https://${PLATFORM_DOCS_APP.toLowerCase()}-dsn.algolia.net`]: fake.hosts.platform_docs_search!,
      [`https://${CRAWLER_DOCS_APP.toLowerCase()}-dsn.algolia.net`]: fake.hosts.crawler_docs_search!,
    };
    const before = fake.requests.length;
    const scraperTools = [...tools.values()].filter((t) => t.connector === 'scraper');
    expect(scraperTools).toHaveLength(8);
    for (const t of scraperTools) {
      for (const example of t.examples) {
        const { data } = await h.client.executeTool({
          toolName: t.name as never,
          toolInput: example.input as never,
          ...who,
          dryRun: true,
        });
        const { requests } = data as {
          requests: Array<{ method: string; url: string; headers: Record<string, string>; body?: unknown }>;
        };
        const want = example.requests.map((r) => {
          // An MCP Actor's Standby host is named by the Actor id the build lookup gives: a placeholder in a dry run.
          const standby = /^https:\/\/(\{from: previous response\})\.apify\.actor/.exec(r.url);
          if (standby) {
            const root = new URL(fake.hosts.standby!);
            return `${r.method} ${root.protocol}//${standby[1]}.${root.host}${r.url.slice(standby[0].length)}`;
          }
          const origin = new URL(r.url).origin;
          return `${r.method} ${hostOf[origin]}${r.url.slice(origin.length)}`;
        });
        expect(
          requests.map((r) => `${r.method} ${r.url}`),
          t.name,
        ).toEqual(want);
        example.requests.forEach((r, i) => expect(requests[i]!.body).toEqual(r.body));
        for (const r of requests) {
          // The platform's API and an MCP Actor's Standby host (which the tool calls with the account's token).
          const toPlatform =
            r.url.startsWith(`${fake.url}/v2/`) || r.url.includes('{from: previous response}.localhost');
          expect(r.headers.authorization, `${t.name} ${r.url}`).toBe(toPlatform ? 'Bearer [REDACTED]' : undefined);
        }
        expect(JSON.stringify(data)).not.toContain(TOKEN);
      }
    }
    expect(fake.requests.length).toBe(before);
  });
});

describe('proxy and provider errors', () => {
  it('proxies /v2/... to the platform with the bearer token injected', async () => {
    const res = await h.client.request({ ...who, path: '/v2/users/me' });
    expect(res.status).toBe(200);
    expect(res.data).toEqual({ data: { id: 'userA1b2c3d4e5f6g7', username: 'jane-doe' } });
    expect(fake.requests.at(-1)!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    const items = await h.client.request({
      ...who,
      path: `/v2/datasets/${lastRun().defaultDatasetId}/items`,
      queryParams: { limit: 1 },
    });
    expect(Array.isArray(items.data)).toBe(true);
  });

  it('keeps the platform status and error body', async () => {
    const e = await failure(run('scraper_get_actor_run', { runId: 'noSuchRun123' }));
    expect(e.status).toBe(404);
    expect(e.isProviderError).toBe(true);
    expect(e.providerBody).toEqual({ error: { type: 'record-not-found', message: 'Actor run was not found' } });
  });

  it('reports a wrong token as the platform 401', async () => {
    await h.client.upsertConnectedAccount({
      connectionName: 'scraper',
      identifier: 'wrong',
      credentials: { token: 'apify_api_wrong' },
    });
    const e = await failure(run('scraper_search_actors', {}, { connectionName: 'scraper', identifier: 'wrong' }));
    expect(e.status).toBe(401);
    expect(e.providerBody).toEqual({
      error: { type: 'token-not-valid', message: 'Authentication token is not valid.' },
    });
  });

  it('never logs the token', () => {
    expect(h.logs.join('\n')).not.toContain(TOKEN);
  });
});

describe('coverage', () => {
  it('executed every scraper tool of the registry against the fake', () => {
    const names = [...tools.values()]
      .filter((t) => t.connector === 'scraper')
      .map((t) => t.name)
      .sort();
    expect([...executed].sort()).toEqual(names);
  });
});
