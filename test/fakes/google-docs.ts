/**
 * A fake document-editing provider speaking the Google Docs API v1 wire format, stateful and strict:
 *   - Bearer tokens are checked against the fake OAuth server and the token's scopes (read: documents,
 *     documents.readonly or a Drive scope with content access; write: documents, drive or drive.file);
 *   - `POST /v1/documents` creates a blank document with the given title ("Untitled document" without one) and
 *     registers it as a Google-native file in the fake Drive, so Drive's files.list finds it;
 *   - `GET /v1/documents/{id}` renders the body as structural elements with UTF-16 indices starting at 1, and
 *     honours `suggestionsViewMode` (a pending suggested insertion is shown inline with suggestedInsertionIds,
 *     previewed as accepted, or left out);
 *   - `POST /v1/documents/{id}:batchUpdate` applies insertText, replaceAllText and deleteContentRange to the
 *     stored text atomically (one invalid request and nothing changes), honours writeControl.requiredRevisionId
 *     (a stale revision is refused) and targetRevisionId, and answers `{documentId, replies, writeControl}`.
 *     Other request kinds are refused with a 400 saying the fake does not implement them.
 * Like Google's One Platform APIs, unknown query parameters and unknown JSON fields are 400 INVALID_ARGUMENT, so
 * a test notices a snake_case field or a version selector that leaked upstream. Errors have the shape
 * `{"error":{"code","message","status"}}`.
 */
import { randomBytes } from 'node:crypto';
import express, { type Request, type Response } from 'express';
import type { FakeOAuthServer } from './oauth-server.ts';
import { GOOGLE_DOC, type FakeDrive } from './google-drive.ts';
import { listen, type Listening } from './listen.ts';
import { asText } from '../helpers/text.ts';

const SCOPE = 'https://www.googleapis.com/auth/';
const READ = ['documents', 'documents.readonly', 'drive', 'drive.readonly', 'drive.file'].map((s) => SCOPE + s);
const WRITE = ['documents', 'drive', 'drive.file'].map((s) => SCOPE + s);
const VIEW_MODES = [
  'DEFAULT_FOR_CURRENT_ACCESS',
  'SUGGESTIONS_INLINE',
  'PREVIEW_SUGGESTIONS_ACCEPTED',
  'PREVIEW_WITHOUT_SUGGESTIONS',
];
/** Request kinds of documents.batchUpdate (the fake applies the first three). */
const SUPPORTED = ['insertText', 'replaceAllText', 'deleteContentRange'];
const KNOWN_KINDS = new Set([
  ...SUPPORTED,
  'createParagraphBullets',
  'deleteParagraphBullets',
  'createNamedRange',
  'deleteNamedRange',
  'updateParagraphStyle',
  'updateTextStyle',
  'insertTable',
  'insertTableRow',
  'insertTableColumn',
  'deleteTableRow',
  'deleteTableColumn',
  'insertPageBreak',
  'deletePositionedObject',
  'updateTableColumnProperties',
  'updateTableCellStyle',
  'updateTableRowStyle',
  'replaceImage',
  'updateDocumentStyle',
  'mergeTableCells',
  'unmergeTableCells',
  'createHeader',
  'createFooter',
  'createFootnote',
  'replaceNamedRangeContent',
  'updateSectionStyle',
  'insertSectionBreak',
  'deleteHeader',
  'deleteFooter',
  'pinTableHeaderRows',
  'insertInlineImage',
]);

export interface Suggestion {
  id: string;
  /** Document index (1-based) where the suggested text would be inserted. */
  index: number;
  text: string;
}

export interface StoredDocument {
  id: string;
  title: string;
  /** The body text; always ends with the segment's final newline. */
  text: string;
  revisions: string[];
  suggestion?: Suggestion;
}

class DocsError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly status: string,
  ) {
    super(message);
  }
  body() {
    return { error: { code: this.code, message: this.message, status: this.status } };
  }
}
const invalid = (message: string) => new DocsError(400, message, 'INVALID_ARGUMENT');

export class FakeDocs {
  readonly documents = new Map<string, StoredDocument>();
  readonly requests: Array<{ method: string; path: string; query: Record<string, unknown>; body: unknown }> = [];
  private listening!: Listening;

  constructor(
    private readonly oauth: FakeOAuthServer,
    private readonly drive: FakeDrive,
  ) {}

  get url(): string {
    return this.listening.url;
  }

  /** Adds a document (and its Drive file). */
  addDocument(
    title: string,
    text = '',
    opts: { suggestion?: Omit<Suggestion, 'id'>; id?: string } = {},
  ): StoredDocument {
    const id = opts.id ?? this.drive.newId();
    const doc: StoredDocument = {
      id,
      title,
      text: text.endsWith('\n') ? text : `${text}\n`,
      revisions: [this.revision()],
      ...(opts.suggestion
        ? { suggestion: { ...opts.suggestion, id: `suggest.${randomBytes(5).toString('hex')}` } }
        : {}),
    };
    this.documents.set(id, doc);
    this.drive.addFile({ id, name: title, mimeType: GOOGLE_DOC, text: doc.text });
    return doc;
  }

  private revision(): string {
    return `ALm37B${randomBytes(18).toString('base64url')}`;
  }

  private sync(doc: StoredDocument): void {
    const f = this.drive.files.get(doc.id);
    if (f) {
      f.text = doc.text;
      f.name = doc.title;
      f.modifiedTime = new Date().toISOString();
    }
  }

  async start(): Promise<this> {
    const app = express();
    app.disable('x-powered-by');
    app.use(express.json({ limit: '5mb', type: () => true }));
    app.use((req, _res, next) => {
      this.requests.push({
        method: req.method,
        path: req.path,
        query: { ...(req.query as Record<string, unknown>) },
        body: req.body,
      });
      next();
    });
    const handle =
      (fn: (req: Request, res: Response) => void) =>
      (req: Request, res: Response): void => {
        try {
          fn(req, res);
        } catch (e) {
          if (e instanceof DocsError) res.status(e.code).json(e.body());
          else throw e;
        }
      };
    app.post(
      '/v1/documents',
      handle((req, res) => this.create(req, res)),
    );
    app.get(
      '/v1/documents/:documentId',
      handle((req, res) => this.get(req, res)),
    );
    app.post(
      '/v1/documents/:target',
      handle((req, res) => this.batchUpdate(req, res)),
    );
    app.use((req, res) =>
      res.status(404).json(new DocsError(404, `Method not found: ${req.method} ${req.path}`, 'NOT_FOUND').body()),
    );
    this.listening = await listen(app);
    return this;
  }

  close(): Promise<void> {
    return this.listening.close();
  }

  private authorize(req: Request, scopes: string[]): void {
    const grant = this.oauth.validate(req.headers.authorization);
    if (!/^Bearer /.test(req.headers.authorization ?? '') || !grant) {
      throw new DocsError(
        401,
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
        'UNAUTHENTICATED',
      );
    }
    if (!scopes.some((s) => grant.scope.split(' ').includes(s)))
      throw new DocsError(403, 'Request had insufficient authentication scopes.', 'PERMISSION_DENIED');
  }

  private query(req: Request, allowed: string[]): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.query)) {
      if (!allowed.includes(k)) {
        throw invalid(
          `Invalid JSON payload received. Unknown name "${k}": Cannot bind query parameter. Field '${k}' could not be found in request message.`,
        );
      }
      out[k] = asText(v);
    }
    return out;
  }

  private doc(id: string): StoredDocument {
    const d = this.documents.get(id);
    if (!d) throw new DocsError(404, 'Requested entity was not found.', 'NOT_FOUND');
    return d;
  }

  private jsonBody(req: Request, allowed: string[]): Record<string, unknown> {
    const b: unknown = req.body;
    if (b === undefined) return {};
    if (!String(req.headers['content-type'] ?? '').startsWith('application/json'))
      throw invalid('Invalid JSON payload: the body must be application/json.');
    if (typeof b !== 'object' || b === null || Array.isArray(b))
      throw invalid('Invalid JSON payload received. Expected an object.');
    for (const k of Object.keys(b))
      if (!allowed.includes(k)) throw invalid(`Invalid JSON payload received. Unknown name "${k}": Cannot find field.`);
    return b as Record<string, unknown>;
  }

  private create(req: Request, res: Response): void {
    this.authorize(req, WRITE);
    this.query(req, ['alt', 'prettyPrint']);
    // documents.create takes a Document; fields other than title are accepted but ignored.
    const body = this.jsonBody(req, [
      'title',
      'documentId',
      'body',
      'documentStyle',
      'revisionId',
      'suggestionsViewMode',
      'tabs',
    ]);
    if (body.title !== undefined && typeof body.title !== 'string')
      throw invalid("Invalid value at 'document.title' (TYPE_STRING)");
    const doc = this.addDocument(body.title ?? 'Untitled document');
    res.json(this.render(doc, 'SUGGESTIONS_INLINE'));
  }

  private get(req: Request, res: Response): void {
    this.authorize(req, READ);
    const q = this.query(req, ['suggestionsViewMode', 'includeTabsContent', 'alt', 'prettyPrint', 'fields']);
    const mode = q.suggestionsViewMode ?? 'DEFAULT_FOR_CURRENT_ACCESS';
    if (!VIEW_MODES.includes(mode)) {
      throw invalid(
        `Invalid value at 'suggestions_view_mode' (type.googleapis.com/google.apps.docs.v1.GetDocumentRequest.SuggestionsViewMode), "${mode}"`,
      );
    }
    const doc = this.doc(String(req.params.documentId));
    // The user of every fake token can edit, so the default for the current access is inline suggestions.
    res.json(this.render(doc, mode === 'DEFAULT_FOR_CURRENT_ACCESS' ? 'SUGGESTIONS_INLINE' : mode));
  }

  /** The Document resource: a section break, then one paragraph per line, text runs split at suggestions. */
  render(doc: StoredDocument, mode: string): Record<string, unknown> {
    const chars: Array<{ c: string; suggested: boolean }> = [...doc.text].flatMap((c) =>
      c.split('').map((u) => ({ c: u, suggested: false })),
    );
    const s = doc.suggestion;
    if (s && mode !== 'PREVIEW_WITHOUT_SUGGESTIONS') {
      const inserted = s.text.split('').map((c) => ({ c, suggested: mode === 'SUGGESTIONS_INLINE' }));
      chars.splice(s.index - 1, 0, ...inserted);
    }
    const content: unknown[] = [
      {
        endIndex: 1,
        sectionBreak: {
          sectionStyle: { columnSeparatorStyle: 'NONE', contentDirection: 'LEFT_TO_RIGHT', sectionType: 'CONTINUOUS' },
        },
      },
    ];
    let index = 1;
    let i = 0;
    while (i < chars.length) {
      let end = i;
      while (chars[end]!.c !== '\n') end++;
      const para = chars.slice(i, end + 1);
      const elements: unknown[] = [];
      let runStart = 0;
      for (let k = 1; k <= para.length; k++) {
        if (k === para.length || para[k]!.suggested !== para[runStart]!.suggested) {
          const text = para
            .slice(runStart, k)
            .map((x) => x.c)
            .join('');
          elements.push({
            startIndex: index + runStart,
            endIndex: index + k,
            textRun: {
              content: text,
              textStyle: {},
              ...(para[runStart]!.suggested ? { suggestedInsertionIds: [s!.id] } : {}),
            },
          });
          runStart = k;
        }
      }
      content.push({
        startIndex: index,
        endIndex: index + para.length,
        paragraph: { elements, paragraphStyle: { namedStyleType: 'NORMAL_TEXT', direction: 'LEFT_TO_RIGHT' } },
      });
      index += para.length;
      i = end + 1;
    }
    return {
      documentId: doc.id,
      title: doc.title,
      body: { content },
      documentStyle: { pageSize: { height: { magnitude: 792, unit: 'PT' }, width: { magnitude: 612, unit: 'PT' } } },
      revisionId: doc.revisions.at(-1),
      suggestionsViewMode: mode,
    };
  }

  private batchUpdate(req: Request, res: Response): void {
    const m = /^(.+):batchUpdate$/.exec(String(req.params.target));
    if (!m) throw new DocsError(404, `Method not found: POST ${req.path}`, 'NOT_FOUND');
    this.authorize(req, WRITE);
    this.query(req, ['alt', 'prettyPrint']);
    const doc = this.doc(m[1]!);
    const body = this.jsonBody(req, ['requests', 'writeControl']);
    const wc = body.writeControl as Record<string, unknown> | undefined;
    if (wc !== undefined) {
      if (typeof wc !== 'object' || wc === null) throw invalid("Invalid value at 'write_control'");
      for (const k of Object.keys(wc)) {
        if (k !== 'requiredRevisionId' && k !== 'targetRevisionId')
          throw invalid(`Invalid JSON payload received. Unknown name "${k}" at 'write_control': Cannot find field.`);
      }
      if (wc.requiredRevisionId !== undefined && wc.targetRevisionId !== undefined) {
        throw invalid('Only one of requiredRevisionId and targetRevisionId may be set.');
      }
      if (wc.requiredRevisionId !== undefined && wc.requiredRevisionId !== doc.revisions.at(-1)) {
        throw new DocsError(
          400,
          `The required revision ID '${asText(wc.requiredRevisionId)}' does not match the latest revision of the document.`,
          'FAILED_PRECONDITION',
        );
      }
      if (wc.targetRevisionId !== undefined && !doc.revisions.includes(asText(wc.targetRevisionId))) {
        throw invalid(`The target revision ID '${asText(wc.targetRevisionId)}' is not a revision of this document.`);
      }
    }
    const requests = body.requests;
    if (!Array.isArray(requests) || requests.length === 0) throw invalid('Must specify at least one request.');
    // Atomic: work on a copy and store it only when every request applied.
    let text = doc.text;
    const suggestion = doc.suggestion ? { ...doc.suggestion } : undefined;
    const replies: unknown[] = [];
    requests.forEach((r: unknown, i: number) => {
      const at = `requests[${i}]`;
      if (!r || typeof r !== 'object' || Array.isArray(r))
        throw invalid(`Invalid value at '${at}': must be a Request object.`);
      const kinds = Object.keys(r);
      if (kinds.length !== 1)
        throw invalid(`Invalid ${at}: exactly one request kind must be set, got ${kinds.length}.`);
      const kind = kinds[0]!;
      if (!KNOWN_KINDS.has(kind))
        throw invalid(`Invalid JSON payload received. Unknown name "${kind}" at '${at}': Cannot find field.`);
      if (!SUPPORTED.includes(kind))
        throw invalid(
          `${kind} is a valid request kind, but the fake does not implement it (it applies ${SUPPORTED.join(', ')}).`,
        );
      const a = (r as Record<string, Record<string, unknown>>)[kind]!;
      const endIndex = text.length + 1;
      if (kind === 'insertText') {
        if (typeof a.text !== 'string') throw invalid(`Invalid ${at}.insertText: text is required.`);
        const loc = a.location as { index?: unknown; segmentId?: unknown } | undefined;
        const eos = a.endOfSegmentLocation;
        if ((loc === undefined) === (eos === undefined))
          throw invalid(`Invalid ${at}.insertText: exactly one of location and endOfSegmentLocation must be set.`);
        const index = loc !== undefined ? loc.index : endIndex - 1;
        if (typeof index !== 'number' || !Number.isInteger(index) || index < 1)
          throw invalid(`Invalid ${at}.insertText: Index ${String(index)} must be at least 1.`);
        if (index >= endIndex)
          throw invalid(
            `Invalid ${at}.insertText: Index ${index} must be less than the end index of the referenced segment, ${endIndex}.`,
          );
        text = text.slice(0, index - 1) + a.text + text.slice(index - 1);
        if (suggestion && index <= suggestion.index) suggestion.index += a.text.length;
        replies.push({});
      } else if (kind === 'replaceAllText') {
        const ct = a.containsText as { text?: unknown; matchCase?: unknown } | undefined;
        if (!ct || typeof ct.text !== 'string' || !ct.text)
          throw invalid(`Invalid ${at}.replaceAllText: containsText.text must not be empty.`);
        const replace = a.replaceText === undefined ? '' : a.replaceText;
        if (typeof replace !== 'string') throw invalid(`Invalid ${at}.replaceAllText: replaceText must be a string.`);
        const needle = ct.matchCase === true ? ct.text : ct.text.toLowerCase();
        let out = '';
        let n = 0;
        for (let p = 0; p < text.length;) {
          const window = text.slice(p, p + needle.length);
          if ((ct.matchCase === true ? window : window.toLowerCase()) === needle) {
            out += replace;
            p += needle.length;
            n++;
          } else {
            out += text[p];
            p++;
          }
        }
        text = out.endsWith('\n') ? out : `${out}\n`;
        replies.push({ replaceAllText: { occurrencesChanged: n } });
      } else {
        const range = a.range as { startIndex?: unknown; endIndex?: unknown } | undefined;
        const s = range?.startIndex;
        const e = range?.endIndex;
        if (typeof s !== 'number' || typeof e !== 'number' || !Number.isInteger(s) || !Number.isInteger(e))
          throw invalid(`Invalid ${at}.deleteContentRange: range.startIndex and range.endIndex are required.`);
        if (s < 1 || e <= s)
          throw invalid(`Invalid ${at}.deleteContentRange: The range must be non-empty and start at index 1 or later.`);
        if (e > endIndex - 1)
          throw invalid(
            `Invalid ${at}.deleteContentRange: The range cannot include the newline character at the end of the segment.`,
          );
        text = text.slice(0, s - 1) + text.slice(e - 1);
        if (suggestion && s < suggestion.index) suggestion.index -= Math.min(e, suggestion.index) - s;
        replies.push({});
      }
    });
    doc.text = text;
    doc.suggestion = suggestion;
    doc.revisions.push(this.revision());
    this.sync(doc);
    res.json({ documentId: doc.id, replies, writeControl: { requiredRevisionId: doc.revisions.at(-1) } });
  }
}
