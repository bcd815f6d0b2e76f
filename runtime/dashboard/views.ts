/**
 * Handlebars views of the dashboard: templates in ./views (partials in ./views/partials), compiled once at
 * start, each page rendered into the layout. `{{…}}` escapes; the only triple-stash is the layout's body.
 */
import { readdirSync, readFileSync } from 'node:fs';
import Handlebars from 'handlebars';

const dir = new URL('./views/', import.meta.url);

function time(ms: unknown): string {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return '—';
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');
}

/** The first sentence of a description, on one line. */
export function firstSentence(text: string): string {
  const m = /^(.+?[.!?])(\s|$)/s.exec(text);
  return (m ? m[1]! : text).replace(/\s+/g, ' ');
}

/**
 * A URL with line-break opportunities after each slash and before `?` and `&`, so a long URL in a narrow box
 * wraps where a reader expects it instead of in the middle of a word.
 */
function urlBreaks(url: unknown): Handlebars.SafeString {
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a template may pass any value; String() is what Handlebars would print
  const parts = String(url ?? '').split(/(?<=\/)(?=[^/])|(?=[?&])/);
  return new Handlebars.SafeString(parts.map((p) => Handlebars.escapeExpression(p)).join('<wbr>'));
}

/** A small, safe subset of Markdown for descriptions and provider notes: `code`, **bold**, paragraphs, links. */
function inlineMarkdown(text: unknown): Handlebars.SafeString {
  // Escapes like Handlebars but keeps backticks, which the code spans below need.
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a template may pass any value; String() is what Handlebars would print
  const escaped = String(text ?? '').replace(/[&<>"'=]/g, (c) => `&#${c.charCodeAt(0)};`);
  const html = escaped
    .split(/\n{2,}/)
    .map((para) =>
      para
        .replace(/`([^`]+)`/g, '<code>$1</code>')
        .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
        .replace(/\[([^\]]+)\]\((https:\/\/[^\s)]+)\)/g, '<a href="$2" rel="noreferrer">$1</a>')
        .replace(/\n/g, ' '),
    )
    .map((p) => `<p>${p}</p>`)
    .join('');
  return new Handlebars.SafeString(html);
}

export class Views {
  private hb = Handlebars.create();
  private pages = new Map<string, Handlebars.TemplateDelegate>();
  private layout: Handlebars.TemplateDelegate;

  constructor() {
    const hb = this.hb;
    hb.registerHelper('eq', (a: unknown, b: unknown) => a === b);
    hb.registerHelper('or', (...args: unknown[]) => args.slice(0, -1).some(Boolean));
    hb.registerHelper('time', time);
    hb.registerHelper('md', inlineMarkdown);
    hb.registerHelper('url-breaks', urlBreaks);
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a template may pass any value; String() is what Handlebars would print
    hb.registerHelper('lower', (v: unknown) => String(v ?? '').toLowerCase());
    for (const f of readdirSync(new URL('partials/', dir))) {
      if (f.endsWith('.hbs')) hb.registerPartial(f.slice(0, -4), readFileSync(new URL(`partials/${f}`, dir), 'utf8'));
    }
    for (const f of readdirSync(dir)) {
      if (!f.endsWith('.hbs')) continue;
      this.pages.set(f.slice(0, -4), hb.compile(readFileSync(new URL(f, dir), 'utf8'), { strict: false }));
    }
    this.layout = this.pages.get('layout')!;
  }

  render(page: string, data: Record<string, unknown>): string {
    const template = this.pages.get(page);
    if (!template) throw new Error(`no dashboard view named ${page}`);
    const body = template(data);
    return this.layout({ ...data, body });
  }
}
