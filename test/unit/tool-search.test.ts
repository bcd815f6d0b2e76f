/**
 * Tool search: the API's behaviour, and its recall on the evaluation sets as floors (the figures reached when
 * they were written; a change that ranks worse fails). The figures are in README.md, "Tool search";
 * `npx tsx bench/tool-search.ts` prints them with the time per search.
 */
import { describe, expect, it } from 'vitest';
import { connectors, tools } from '../../generated/registry.ts';
import { ServiceError } from '../../core/errors.ts';
import type { ToolDefinition } from '../../core/tool-types.ts';
import {
  createToolSearch,
  MAX_QUERY_CHARS,
  MAX_QUERY_TERMS,
  MAX_TERM_CHARS,
  queryWords,
  searchTools,
  searchVocabulary,
} from '../../runtime/tools/search.ts';
import { EVAL_SET, HOLDOUT_SET, loadTasks, recall } from '../helpers/tool-search-eval.ts';
import { record } from '../reliability/summary.ts';

describe('tool search recall', () => {
  it('finds the tool of the evaluation tasks (120, used to tune the engine)', () => {
    const tasks = loadTasks(EVAL_SET);
    expect(tasks.length).toBeGreaterThanOrEqual(60);
    // The set was written for the connectors of its time: each still exists (a new connector may have no task yet).
    for (const c of new Set(tasks.map((t) => t.tools[0]!.split('_')[0]!))) expect(connectors.has(c), c).toBe(true);
    for (const t of tasks) for (const name of t.tools) expect(tools.has(name), name).toBe(true);
    const r = recall(searchTools, tasks);
    expect(r.tasks).toBe(120);
    expect(r.top5, JSON.stringify(r.misses, null, 1)).toBeGreaterThanOrEqual(119);
    expect(r.top1).toBeGreaterThanOrEqual(88);
  });

  it('finds the tool of the held-out tasks (30, never tuned on)', () => {
    const tasks = loadTasks(HOLDOUT_SET);
    for (const t of tasks) for (const name of t.tools) expect(tools.has(name), name).toBe(true);
    const r = recall(searchTools, tasks);
    expect(r.tasks).toBe(30);
    expect(r.top5).toBeGreaterThanOrEqual(25);
    expect(r.top1).toBeGreaterThanOrEqual(17);
  });
});

describe('searchTools', () => {
  it('answers name, connector, title, description and a score, best first', () => {
    const hits = searchTools("reply to the customer's ticket saying we fixed it");
    expect(hits).toHaveLength(5);
    const best = tools.get(hits[0]!.name)!;
    expect(hits[0]).toEqual({
      name: 'helpdesk_ticket_reply',
      connector: 'helpdesk',
      title: best.title,
      description: best.description,
      score: expect.any(Number),
    });
    const scores = hits.map((h) => h.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(scores.at(-1)).toBeGreaterThan(0);
  });

  it('keeps to one connector when asked, and to the limit', () => {
    const hits = searchTools('list the tickets and users', { connector: 'helpdesk', limit: 3 });
    expect(hits).toHaveLength(3);
    expect(hits.every((h) => h.connector === 'helpdesk')).toBe(true);
    expect(searchTools('list', { limit: tools.size }).length).toBeGreaterThan(5);
  });

  it('matches despite a misspelling and word forms', () => {
    expect(searchTools('serch tikets about refunds')[0]!.name).toBe('helpdesk_search_tickets');
    expect(searchTools('transcripts of recorded calls')[0]!.name).toBe('callintel_calls_transcript_get');
  });

  it('answers nothing for a task no tool fits', () => {
    expect(searchTools('zzzz qqqq')).toEqual([]);
  });

  it('refuses bad input, naming the field', () => {
    const fails = (q: unknown, options?: object) => {
      try {
        searchTools(q as string, options);
      } catch (e) {
        expect(e).toBeInstanceOf(ServiceError);
        return ((e as ServiceError).details as Array<{ field: string }>)[0]!.field;
      }
      return undefined;
    };
    expect(fails('  ')).toBe('q');
    expect(fails(undefined)).toBe('q');
    expect(fails('send mail', { limit: 0 })).toBe('limit');
    expect(fails('send mail', { limit: 2.5 })).toBe('limit');
    expect(fails('send mail', { limit: tools.size + 1 })).toBe('limit');
    expect(fails('send mail', { connector: 'gmail' })).toBe('connector');
  });

  it('bounds the work a query can ask for: its length, its words and each word (issue 34, finding 3)', () => {
    // A 60,000-character query once took 3.4 GB in the fuzzy matcher: now refused before any work, naming the bound.
    const long = (() => {
      try {
        searchTools('y'.repeat(60_000));
      } catch (e) {
        return e as ServiceError;
      }
    })();
    expect(long?.status).toBe(400);
    expect(long?.details).toEqual([
      { field: 'q', message: `must be at most ${MAX_QUERY_CHARS} characters (it has 60000)` },
    ]);
    // Within the bound, the words searched are at most MAX_QUERY_TERMS, each at most MAX_TERM_CHARS long.
    const manyWords = Array.from({ length: MAX_QUERY_CHARS / 4 }, (_, i) => `w${i % 100}`).join(' ');
    expect(queryWords(manyWords)).toHaveLength(MAX_QUERY_TERMS);
    const oneWord = queryWords('x'.repeat(MAX_QUERY_CHARS));
    expect(oneWord).toEqual(['x'.repeat(MAX_TERM_CHARS)]);
    expect(searchTools('x'.repeat(MAX_QUERY_CHARS))).toEqual([]);
    // The words of a task still count as before.
    expect(queryWords("reply to the customer's ticket")).toEqual(['reply', 'to', 'the', 'customer', 's', 'ticket']);
    record({
      category: 'query bounds',
      what: 'tool search queries over the bound, with too many words, and with one long word',
      tried: 4,
      failed: 0,
    });
  });

  it("searches each connector's own words, from its YAML's search keywords and vocabulary", () => {
    for (const c of connectors.values()) {
      for (const keyword of c.search?.keywords ?? []) {
        const hits = searchTools(keyword, { connector: c.name, limit: 1 });
        expect(hits.length, `${c.name}: "${keyword}"`).toBe(1);
      }
    }
    const vocabulary = searchVocabulary(connectors);
    for (const c of connectors.values())
      for (const [word, words] of Object.entries(c.search?.vocabulary ?? {}))
        for (const w of words.split(' ')) expect(vocabulary.get(word), `${c.name}: ${word}`).toContain(w);
  });
});

describe('createToolSearch', () => {
  const base = tools.get('helpdesk_ticket_reply')!;
  const tool = (name: string, description: string, keywords?: string[]): ToolDefinition => ({
    ...base,
    name,
    title: name,
    description,
    inputSchema: { type: 'object', properties: {} },
    ...(keywords ? { keywords } : {}),
  });

  it("indexes a tool's own keywords", () => {
    const set = new Map([
      ['helpdesk_alpha', tool('helpdesk_alpha', 'First tool.', ['escalate', 'manager'])],
      ['helpdesk_beta', tool('helpdesk_beta', 'Second tool.')],
    ]);
    const search = createToolSearch(set, connectors);
    expect(search('escalate this to a manager').map((h) => h.name)).toEqual(['helpdesk_alpha']);
  });

  it("reads a connector's keywords and vocabulary from its definition, merging a word two connectors map", () => {
    const helpdesk = connectors.get('helpdesk')!;
    const withWords = (name: string, search: NonNullable<typeof helpdesk.search>) => ({ ...helpdesk, name, search });
    const set = new Map([
      ['alpha_one', { ...tool('alpha_one', 'Lists the widgets.'), connector: 'alpha' }],
      ['beta_one', { ...tool('beta_one', 'Lists the gadgets.'), connector: 'beta' }],
    ]);
    const search = createToolSearch(
      set,
      new Map([
        ['alpha', withWords('alpha', { keywords: ['zorblax'], vocabulary: { thingamajig: 'widgets' } })],
        ['beta', withWords('beta', { vocabulary: { thingamajig: 'gadgets' } })],
      ]),
    );
    expect(search('zorblax').map((h) => h.name)).toEqual(['alpha_one']);
    expect(
      search('thingamajig')
        .map((h) => h.name)
        .sort(),
    ).toEqual(['alpha_one', 'beta_one']);
    expect(search('doohickey')).toEqual([]);
  });

  it('does not count a pointer to another tool as a match for this one', () => {
    const set = new Map([
      ['helpdesk_alpha', tool('helpdesk_alpha', 'Raw records. For summaries use helpdesk_beta.')],
      ['helpdesk_beta', tool('helpdesk_beta', 'Summaries of records.')],
    ]);
    expect(createToolSearch(set, connectors)('summaries').map((h) => h.name)).toEqual(['helpdesk_beta']);
  });
});
