/**
 * The tool explorer's search, kept to one function so a ranked tool search can take its place: it gets the
 * query and answers the matching tools, best first; the page only groups what it gets by connector.
 */
import type { ToolDefinition } from '../../core/tool-types.ts';
import { connectors, getTool } from '../connectors/catalog.ts';

/** Longer queries are cut here: nobody types more, and it bounds the work a request can ask for. */
export const MAX_QUERY_LENGTH = 200;

/**
 * A plain filter: every word of the query appears (case-insensitively) in the tool's name, title or
 * description, or in its connector's name or title. An empty query matches every tool. Matches come in
 * catalogue order (connectors by title, each connector's tools in their own order): there is no ranking.
 */
export function findTools(query: string): ToolDefinition[] {
  const words = query.slice(0, MAX_QUERY_LENGTH).toLowerCase().split(/\s+/).filter(Boolean);
  const found: ToolDefinition[] = [];
  for (const c of [...connectors.values()].sort((a, b) => a.title.localeCompare(b.title))) {
    for (const name of c.toolNames) {
      const t = getTool(name)!;
      const text = [t.name, t.title, t.description, c.name, c.title].join('\n').toLowerCase();
      if (words.every((w) => text.includes(w))) found.push(t);
    }
  }
  return found;
}
