/**
 * Hooks of the meeting-notes connector (Granola MCP server): what the templates of specs/notes.yaml cannot say.
 * The server lists meetings as XML-like text; the `notes_note_created` trigger reads its items from it.
 */

/** The text of an MCP tool result: its `content` items of type text, joined. */
function resultText(answer: unknown): string {
  const content = (answer as { content?: unknown })?.content;
  if (!Array.isArray(content)) return '';
  return (content as Array<{ type?: unknown; text?: unknown }>)
    .filter((c) => c?.type === 'text' && typeof c.text === 'string')
    .map((c) => c.text as string)
    .join('\n');
}

const unescape = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');

function attribute(tag: string, name: string): string | undefined {
  const m = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
  return m ? unescape(m[1]!) : undefined;
}

/** `<meeting id="…" title="…" date="…">` elements of `list_meetings`, with their known participants. */
export function meetingItems(answer: unknown): unknown[] {
  const text = resultText(answer);
  const out: Array<Record<string, unknown>> = [];
  // The start tag ends at the first `>` outside a quoted value: a title may hold a bare `>` (legal in XML).
  const re = /<meeting((?:\s+[\w:-]+="[^"]*")*)\s*>([\s\S]*?)<\/meeting>/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const tag = m[1] ?? '';
    const id = attribute(tag, 'id');
    if (!id) continue;
    const participants = /<known_participants>([\s\S]*?)<\/known_participants>/
      .exec(m[2] ?? '')?.[1]
      ?.split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    out.push({
      id,
      title: attribute(tag, 'title') ?? '',
      date: attribute(tag, 'date') ?? '',
      participants: participants ?? [],
    });
  }
  return out;
}
