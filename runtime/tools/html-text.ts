/**
 * HTML bodies (mail, events, ticket comments, auto-replies) as the text an agent reads: `html-to-text` (a parser,
 * not a regular expression, so entities, lists, tables and nested markup come out right), with links kept as
 * `text [url]`, and images, style sheets and scripts dropped (a newsletter's tracking pixels and CSS are most of its
 * bytes). Loaded on first use, as most answers have no HTML. The work is bounded: a body longer than
 * MAX_HTML_CHARS is converted up to that point and marked as cut.
 */
import type { compile as compileFn } from 'html-to-text';

/** The longest HTML body converted; the rest is cut (the whole body stays in response_format detailed). */
export const MAX_HTML_CHARS = 512 * 1024;

type Converter = (html: string) => string;
let converter: Promise<Converter> | undefined;

/** Markup, not text that merely contains `<` (a tag opens with a letter, `/` or `!`). */
const TAG = /<[a-zA-Z!/][^<>]*>/;

export function looksLikeHtml(text: string): boolean {
  return TAG.test(text);
}

export function htmlConverter(): Promise<Converter> {
  converter ??= import('html-to-text').then(({ compile }: { compile: typeof compileFn }) => {
    const convert = compile({
      wordwrap: false,
      limits: { maxInputLength: MAX_HTML_CHARS, ellipsis: ' …[cut]', maxDepth: 64, maxChildNodes: 4096 },
      selectors: [
        { selector: 'img', format: 'skip' },
        { selector: 'style', format: 'skip' },
        { selector: 'script', format: 'skip' },
        { selector: 'head', format: 'skip' },
        { selector: 'a', options: { hideLinkHrefIfSameAsText: true, linkBrackets: ['[', ']'] } },
        // Headings as written, not upper-cased: an agent quotes them.
        ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } })),
        // Mail lays pages out in tables: cells as wide as their text, so nothing is wrapped.
        { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false, maxColumnWidth: 100_000 } },
      ],
    });
    return (html: string) =>
      convert(html)
        .replace(/[ \t]+\n/g, '\n')
        .replace(/\n{3,}/g, '\n\n')
        .trim();
  });
  return converter;
}
