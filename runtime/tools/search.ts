/**
 * Tool search: the tools that fit a task described in natural language ("reply to the customer's ticket
 * saying we fixed it"), ranked by relevance. MiniSearch does the ranking (BM25+ with field boosts, prefix
 * and fuzzy matching) over each tool's name, title, description, parameters, connector and keywords; terms
 * are lower-cased, stripped of stop words and stemmed (Porter), so "replies", "replied" and "reply" meet.
 * The index is built once, on first use, from the generated registry.
 */
import MiniSearch from 'minisearch';
import { stemmer } from 'stemmer';
import { connectors, tools } from '../../generated/registry.ts';
import { badRequest } from '../../core/errors.ts';
import type { ConnectorDefinition, ToolDefinition } from '../../core/tool-types.ts';
import { NEXT_CURSOR, RESPONSE_FORMAT } from '../../core/answer.ts';

export interface ToolSearchHit {
  name: string;
  connector: string;
  title: string;
  description: string;
  score: number;
}

export interface ToolSearchOptions {
  /** Most hits returned (1 to the number of tools; default 5, or fewer tools). */
  limit?: number;
  /** Only tools of this connector. */
  connector?: string;
}

/**
 * What users say for what tool texts say, applied to a query's words: the verbs every connector shares (cancel =
 * delete, find = search). Values are words of the tools' own vocabulary, added to the query beside the user's word.
 * A connector's own words (a sequence is a flow, an opportunity a deal) are in its YAML's `search.vocabulary`, and
 * its product names in `search.keywords`: nothing here names a connector.
 */
export const QUERY_VOCABULARY: Readonly<Record<string, string>> = {
  add: 'create',
  new: 'create',
  save: 'create',
  register: 'create',
  make: 'create',
  start: 'create',
  change: 'update',
  edit: 'update',
  modify: 'update',
  move: 'update',
  rename: 'update',
  set: 'update',
  mark: 'update complete',
  close: 'update status',
  turn: 'update',
  cancel: 'delete',
  remove: 'delete unassign',
  erase: 'delete',
  trash: 'delete',
  find: 'search',
  lookup: 'get search',
  locate: 'search',
  show: 'list get',
  view: 'get',
  read: 'get',
  open: 'get',
  fetch: 'get',
  details: 'get',
  respond: 'reply',
  answer: 'reply',
  member: 'user',
  draft: 'create',
  write: 'create send',
  put: 'create',
  push: 'update',
  bump: 'update',
  reopen: 'update status',
  pull: 'get',
  launch: 'run',
  trigger: 'run',
  execute: 'run',
};

/** Phrases whose words mean something only together, rewritten before the query is split into words. */
const QUERY_PHRASES: ReadonlyArray<[RegExp, string]> = [
  [/\bto-?dos?\b/gi, 'task'],
  [/\bout[- ]of[- ]office\b|\bauto-?repl(?:y|ies)\b/gi, 'automatic replies settings'],
  [/\baddress book\b/gi, 'contacts list'],
  [/\blook(?:ing)? up\b/gi, 'lookup'],
  [/\btake\b(.*?)\bout of\b/gi, 'remove $1'],
  [/\bdecision[- ]makers?\b/gi, 'people leads seniority'],
  [/\bkick(?:ed|ing)? off\b/gi, 'run'],
  [/\bhow many\b/gi, 'search'],
  [/\blet\b(.{1,40}?)\bknow\b/gi, 'reply $1'],
];

const STOP_WORDS = new Set(
  (
    "a an and are as at be been by can could do does for from get give had has have how i i'm i'll in into is it " +
    "its it's let me my of on one or our please show so some than that the their them then there these they this " +
    "those to up us was we we're what what's when where which while who whom why will with would you your"
  ).split(' '),
);

/** Splits identifiers into words: `toRecipients` → "to Recipients", `$filter` → "filter", `a_b` → "a b". */
function words(text: string): string {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_$]/g, ' ')
    .trim();
}

/**
 * Bounds on what a query makes the index do. MiniSearch's fuzzy match costs about (term length) × (edit distance)
 * per node it visits, and its distance grows with the term: one 60,000-character term took 3.4 GB. A query is at
 * most MAX_QUERY_CHARS characters (refused beyond, before any work), of which the first MAX_QUERY_TERMS words
 * count, each cut to MAX_TERM_CHARS characters, with an edit distance of at most MAX_FUZZY.
 */
export const MAX_QUERY_CHARS = 1000;
export const MAX_QUERY_TERMS = 64;
export const MAX_TERM_CHARS = 32;
const MAX_FUZZY = 2;

const tokenize = MiniSearch.getDefault('tokenize') as (text: string) => string[];

/** The words of a query that are searched, after the phrase rewrites, at most MAX_QUERY_TERMS. */
export function queryWords(query: string): string[] {
  return tokenize(rewritePhrases(query))
    .filter(Boolean)
    .slice(0, MAX_QUERY_TERMS)
    .map((w) => w.slice(0, MAX_TERM_CHARS));
}

/**
 * The vocabulary a search applies: the shared verbs, and every connector's `search.vocabulary` (a word two
 * connectors map gains the words of both).
 */
export function searchVocabulary(connectorset: ReadonlyMap<string, ConnectorDefinition>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const add = (word: string, words: string) => {
    const list = out.get(word) ?? [];
    for (const w of words.split(' ')) if (w && !list.includes(w)) list.push(w);
    out.set(word, list);
  };
  for (const [word, words] of Object.entries(QUERY_VOCABULARY)) add(word, words);
  for (const c of connectorset.values())
    for (const [word, words] of Object.entries(c.search?.vocabulary ?? {})) add(word.toLowerCase(), words);
  return out;
}

function queryTermWith(vocabulary: ReadonlyMap<string, string[]>): (term: string) => string[] | null {
  return (term) => {
    const base = processTerm(term);
    if (base === null) return null;
    const extra = vocabulary.get(term.toLowerCase());
    if (!extra) return [base];
    return [base, ...extra.map((w) => stemmer(w))];
  };
}

function rewritePhrases(query: string): string {
  return QUERY_PHRASES.reduce((q, [pattern, replacement]) => q.replace(pattern, replacement), query);
}

function processTerm(term: string): string | null {
  const t = term.toLowerCase().replace(/^'+|'+$/g, '');
  if (t.length < 2 || STOP_WORDS.has(t) || /^\d+$/.test(t)) return null;
  return stemmer(t);
}

const ANSWER_PARAMS = new Set([RESPONSE_FORMAT, NEXT_CURSOR]);

/**
 * Parameter names and descriptions, nested ones included; not the service's own (response_format, next_cursor),
 * which every tool has and which say nothing about what it does.
 */
function parameterText(schema: Record<string, unknown>, out: string[] = []): string[] {
  for (const [name, p] of Object.entries((schema.properties as Record<string, Record<string, unknown>>) ?? {})) {
    if (ANSWER_PARAMS.has(name)) continue;
    out.push(words(name));
    if (typeof p.description === 'string') out.push(p.description);
    parameterText(p, out);
    if (p.items && typeof p.items === 'object') parameterText(p.items as Record<string, unknown>, out);
  }
  return out;
}

/**
 * A description without its pointers to other tools ("for summaries use notes_query_meetings"): they say
 * when not to use this one, and would otherwise draw those searches to it.
 */
function ownDescription(tool: ToolDefinition, names: readonly string[]): string {
  return tool.description
    .split(/(?<=[.;])\s+/)
    .filter((clause) => !names.some((other) => other !== tool.name && clause.includes(other)))
    .join(' ');
}

function document(tool: ToolDefinition, connector: ConnectorDefinition | undefined, names: readonly string[]) {
  return {
    id: tool.name,
    name: words(tool.name),
    title: tool.title === tool.name ? '' : tool.title,
    description: ownDescription(tool, names),
    keywords: (tool.keywords ?? []).join(' '),
    connectorText: [
      tool.connector,
      connector?.title ?? '',
      connector?.provider ?? '',
      ...(connector?.search?.keywords ?? []),
    ].join(' '),
    params: parameterText(tool.inputSchema).join(' '),
    connector: tool.connector,
  };
}

const BOOST = { name: 3, title: 2, keywords: 3, description: 2, connectorText: 1, params: 0.5 };

export type ToolSearch = (query: string, options?: ToolSearchOptions) => ToolSearchHit[];

/** A search over the given tools; the index is built on the first search. */
export function createToolSearch(
  toolset: ReadonlyMap<string, ToolDefinition>,
  connectorset: ReadonlyMap<string, ConnectorDefinition>,
): ToolSearch {
  let index: MiniSearch<ReturnType<typeof document>> | undefined;
  const searchIndex = () => {
    if (index) return index;
    const names = [...toolset.keys()];
    index = new MiniSearch({
      fields: ['name', 'title', 'description', 'keywords', 'connectorText', 'params'],
      storeFields: ['connector'],
      processTerm,
      searchOptions: {
        boost: BOOST,
        prefix: (term) => term.length >= 4,
        fuzzy: (term) => (term.length >= 5 ? 0.2 : false),
        maxFuzzy: MAX_FUZZY,
        combineWith: 'OR',
        processTerm: queryTermWith(searchVocabulary(connectorset)),
      },
    });
    index.addAll([...toolset.values()].map((t) => document(t, connectorset.get(t.connector), names)));
    return index;
  };

  return (query, options = {}) => {
    const limit = options.limit ?? Math.min(5, toolset.size);
    if (typeof query !== 'string' || !query.trim()) {
      throw badRequest('Invalid search', [{ field: 'q', message: 'must describe the task in words' }]);
    }
    if (query.length > MAX_QUERY_CHARS) {
      throw badRequest('Invalid search', [
        { field: 'q', message: `must be at most ${MAX_QUERY_CHARS} characters (it has ${query.length})` },
      ]);
    }
    if (!Number.isInteger(limit) || limit < 1 || limit > toolset.size) {
      throw badRequest('Invalid search', [{ field: 'limit', message: `must be an integer from 1 to ${toolset.size}` }]);
    }
    const connector = options.connector;
    if (connector !== undefined && !connectorset.has(connector)) {
      throw badRequest('Invalid search', [
        { field: 'connector', message: `is not a connector (connectors: ${[...connectorset.keys()].join(', ')})` },
      ]);
    }
    const results = searchIndex().search(
      queryWords(query).join(' '),
      connector ? { filter: (r) => r.connector === connector } : undefined,
    );
    return results.slice(0, limit).map((r) => {
      const tool = toolset.get(r.id as string)!;
      return {
        name: tool.name,
        connector: tool.connector,
        title: tool.title,
        description: tool.description,
        score: Math.round(r.score * 1000) / 1000,
      };
    });
  };
}

/** The registry's tools that best fit a task, best first, with MiniSearch's relevance score (higher is better). */
export const searchTools: ToolSearch = createToolSearch(tools, connectors);
