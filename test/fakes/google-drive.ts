/**
 * A fake file-storage provider speaking the Google Drive API v3 wire format, stateful and strict about what it
 * receives:
 *   - Bearer tokens are checked against the fake OAuth server, and each operation against the token's scopes
 *     (read metadata, download, upload), answering 401 / 403 insufficientPermissions like Drive;
 *   - `GET /drive/v3/files` parses `q` (fullText contains, name contains / = / !=, mimeType = / != / contains,
 *     trashed = , starred = , 'x' in parents, 'x' in owners, createdTime / modifiedTime comparisons, and / or /
 *     not, parentheses, `\'` and `\\` escapes), refuses orderBy with a fullText term, pages with nextPageToken,
 *     keeps shared-drive files out unless supportsAllDrives + includeItemsFromAllDrives + corpora=allDrives ask
 *     for them, and leaves trashed files in unless the query says `trashed = false`;
 *   - `fields` is parsed and validated against the File / FileList resources (a bare `id,name` on a list is a 400
 *     "Invalid field selection", as on Drive) and applied to the answer; without it Drive's small default set is sent;
 *   - `GET /drive/v3/files/{id}?alt=media` streams the bytes from disk; Google-native files answer 403
 *     fileNotDownloadable; shared-drive files answer 404 without supportsAllDrives=true;
 *   - `POST /upload/drive/v3/files?uploadType=media` consumes the raw body as a stream (hashing it on the way to a
 *     file on disk, never holding it in memory) and answers a File resource with the new id. The `name` query
 *     parameter is not a files.create parameter: like Drive (per the provider notes) the fake ignores it and the
 *     file is called "Untitled".
 *   - the changes feed: `GET /drive/v3/changes/startPageToken` answers the token of the next change; `GET
 *     /drive/v3/changes?pageToken=` answers the changes from that token on (every addFile, updateFile, removeFile and
 *     upload is one), `pageSize` (1–1000, default 100) at a time, with `nextPageToken` while more remain and
 *     `newStartPageToken` on the last page only. pageToken is required and must be a token this fake issued (else
 *     400 Invalid Value: `issuedTokens` says which, and how); `includeRemoved` (default true, as on Drive) drops removals when false; shared-drive
 *     changes need supportsAllDrives + includeItemsFromAllDrives; `fields` is validated against the ChangeList
 *     resource and applied. A removed file's change has no `file`.
 * Unknown query parameters are refused with 400 so a test notices anything the service should not send
 * (e.g. schema_version). Errors use Drive's legacy shape `{"error":{"code","message","errors":[{domain,reason,message,...}]}}`.
 * The `drive.file` scope is treated like full access (the fake does not track which app opened which file).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import express, { type Request, type Response } from 'express';
import type { FakeOAuthServer } from './oauth-server.ts';
import { listen, type Listening } from './listen.ts';

export const FOLDER = 'application/vnd.google-apps.folder';
export const GOOGLE_DOC = 'application/vnd.google-apps.document';
export const GOOGLE_SHEET = 'application/vnd.google-apps.spreadsheet';

const SCOPE = 'https://www.googleapis.com/auth/';
const READ_METADATA = ['drive', 'drive.readonly', 'drive.metadata', 'drive.metadata.readonly', 'drive.file'].map(
  (s) => SCOPE + s,
);
const READ_CONTENT = ['drive', 'drive.readonly', 'drive.file'].map((s) => SCOPE + s);
const WRITE = ['drive', 'drive.file'].map((s) => SCOPE + s);

export interface DriveFile {
  id: string;
  name: string;
  mimeType: string;
  createdTime: string;
  modifiedTime: string;
  parents: string[];
  ownerEmail: string;
  trashed: boolean;
  starred: boolean;
  /** The shared drive holding the file, if any. */
  driveId?: string;
  /** Indexed text (what fullText searches besides the name). */
  text: string;
  /** Binary content on disk (absent for folders and Google-native files). */
  contentPath?: string;
  size?: number;
  md5?: string;
  sha256?: string;
}

export interface ReceivedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
}

const USER_FIELDS = new Set(['kind', 'displayName', 'emailAddress', 'me', 'permissionId', 'photoLink']);
type FieldSchema = Map<string, FieldSchema | true>;
const userSchema: FieldSchema = new Map([...USER_FIELDS].map((f) => [f, true as const]));
const FILE_SCHEMA: FieldSchema = new Map<string, FieldSchema | true>([
  ...[
    'kind',
    'id',
    'name',
    'mimeType',
    'description',
    'starred',
    'trashed',
    'parents',
    'createdTime',
    'modifiedTime',
    'size',
    'webViewLink',
    'webContentLink',
    'iconLink',
    'driveId',
    'md5Checksum',
    'fileExtension',
    'resourceKey',
    'quotaBytesUsed',
    'ownedByMe',
    'shared',
    'version',
    'viewedByMeTime',
  ].map((f) => [f, true as const] as const),
  ['owners', userSchema],
  ['lastModifyingUser', userSchema],
]);
const FILE_LIST_SCHEMA: FieldSchema = new Map<string, FieldSchema | true>([
  ['kind', true],
  ['nextPageToken', true],
  ['incompleteSearch', true],
  ['files', FILE_SCHEMA],
]);

const CHANGE_SCHEMA: FieldSchema = new Map<string, FieldSchema | true>([
  ...['kind', 'changeType', 'time', 'removed', 'fileId', 'driveId'].map((f) => [f, true as const] as const),
  ['file', FILE_SCHEMA],
]);
const CHANGE_LIST_SCHEMA: FieldSchema = new Map<string, FieldSchema | true>([
  ['kind', true],
  ['nextPageToken', true],
  ['newStartPageToken', true],
  ['changes', CHANGE_SCHEMA],
]);
const START_TOKEN_SCHEMA: FieldSchema = new Map<string, FieldSchema | true>([
  ['kind', true],
  ['startPageToken', true],
]);
const START_TOKEN_PARAMS = new Set(['driveId', 'supportsAllDrives', 'fields', 'prettyPrint', 'alt']);
const CHANGES_PARAMS = new Set([
  'pageToken',
  'pageSize',
  'includeRemoved',
  'includeItemsFromAllDrives',
  'supportsAllDrives',
  'includeCorpusRemovals',
  'restrictToMyDrive',
  'spaces',
  'driveId',
  'fields',
  'prettyPrint',
  'alt',
]);
/** The token of the first change: Drive's tokens are decimal numbers, not small ones. */
const FIRST_CHANGE = 4_096;

/** One entry of the changes feed: what changed and when (a removed file's entry keeps no resource). */
export interface DriveChange {
  fileId: string;
  time: string;
  removed: boolean;
  driveId?: string;
}

const LIST_PARAMS = new Set([
  'q',
  'pageSize',
  'pageToken',
  'orderBy',
  'fields',
  'supportsAllDrives',
  'includeItemsFromAllDrives',
  'corpora',
  'driveId',
  'spaces',
  'alt',
  'prettyPrint',
]);
const GET_PARAMS = new Set(['fields', 'supportsAllDrives', 'alt', 'acknowledgeAbuse', 'prettyPrint']);
const UPLOAD_PARAMS = new Set(['uploadType', 'name', 'fields', 'supportsAllDrives', 'prettyPrint']);
const SORT_KEYS = new Set([
  'createdTime',
  'folder',
  'modifiedByMeTime',
  'modifiedTime',
  'name',
  'name_natural',
  'quotaBytesUsed',
  'recency',
  'sharedWithMeTime',
  'starred',
  'viewedByMeTime',
]);

class DriveError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason: string,
    readonly location?: string,
    readonly locationType = 'parameter',
    readonly domain = 'global',
  ) {
    super(message);
  }
  body() {
    return {
      error: {
        code: this.status,
        message: this.message,
        errors: [
          {
            message: this.message,
            domain: this.domain,
            reason: this.reason,
            ...(this.location ? { location: this.location, locationType: this.locationType } : {}),
          },
        ],
      },
    };
  }
}

const invalidValue = (location: string) => new DriveError(400, 'Invalid Value', 'invalid', location);

// ----------------------------------------------------------------------------------------------------------
// fields: partial-response selections
// ----------------------------------------------------------------------------------------------------------

type Selection = Map<string, Selection | true>;

/** Parses `a,b(c,d/e),f/g` into a tree; throws on syntax errors. */
export function parseFields(text: string): Selection {
  let i = 0;
  const list = (): Selection => {
    const out: Selection = new Map();
    for (;;) {
      while (text[i] === ' ') i++;
      const m = /^(\*|[A-Za-z_][A-Za-z0-9_]*(?:\/[A-Za-z_][A-Za-z0-9_]*)*)/.exec(text.slice(i));
      if (!m) throw new Error(`unexpected "${text.slice(i, i + 10)}"`);
      i += m[0].length;
      const segs = m[1]!.split('/');
      let sub: Selection | true = true;
      while (text[i] === ' ') i++;
      if (text[i] === '(') {
        i++;
        sub = list();
        if (text[i] !== ')') throw new Error('missing )');
        i++;
      }
      for (let k = segs.length - 1; k > 0; k--) sub = new Map([[segs[k]!, sub]]);
      const prev = out.get(segs[0]!);
      out.set(
        segs[0]!,
        prev instanceof Map && sub instanceof Map
          ? new Map([...prev, ...sub])
          : sub === true || prev === undefined
            ? sub
            : prev,
      );
      while (text[i] === ' ') i++;
      if (text[i] === ',') {
        i++;
        continue;
      }
      return out;
    }
  };
  const sel = list();
  if (i !== text.length) throw new Error(`unexpected "${text.slice(i)}"`);
  return sel;
}

/** The first selected path the schema does not have, e.g. "id" on a FileList. */
function invalidSelection(sel: Selection, schema: FieldSchema, prefix = ''): string | undefined {
  for (const [name, sub] of sel) {
    if (name === '*') continue;
    const s = schema.get(name);
    if (s === undefined) return prefix + name;
    if (sub instanceof Map) {
      if (s === true) return prefix + name;
      const bad = invalidSelection(sub, s, `${prefix}${name}/`);
      if (bad) return bad;
    }
  }
  return undefined;
}

function project(value: unknown, sel: Selection | true): unknown {
  if (sel === true || sel.has('*') || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => project(v, sel));
  const out: Record<string, unknown> = {};
  for (const [name, sub] of sel) {
    const v = (value as Record<string, unknown>)[name];
    if (v !== undefined) out[name] = project(v, sub);
  }
  return out;
}

function selection(fields: string | undefined, schema: FieldSchema, fallback: string): Selection {
  const text = fields ?? fallback;
  let sel: Selection;
  try {
    sel = parseFields(text.trim());
  } catch {
    throw new DriveError(400, `Invalid field selection ${text}`, 'invalidParameter', 'fields');
  }
  const bad = invalidSelection(sel, schema);
  if (bad) throw new DriveError(400, `Invalid field selection ${bad}`, 'invalidParameter', 'fields');
  return sel;
}

// ----------------------------------------------------------------------------------------------------------
// q: the search query language
// ----------------------------------------------------------------------------------------------------------

type Token = { t: 'str'; v: string } | { t: 'word'; v: string } | { t: 'op'; v: string } | { t: '(' } | { t: ')' };

function tokenize(q: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < q.length) {
    const c = q[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === "'") {
      let v = '';
      i++;
      for (;;) {
        if (i >= q.length) throw new Error('unterminated string');
        const d = q[i]!;
        if (d === '\\') {
          const e = q[i + 1];
          if (e !== "'" && e !== '\\') throw new Error('bad escape');
          v += e;
          i += 2;
        } else if (d === "'") {
          i++;
          break;
        } else {
          v += d;
          i++;
        }
      }
      out.push({ t: 'str', v });
    } else if (c === '(' || c === ')') {
      out.push({ t: c });
      i++;
    } else {
      const m = /^(!=|<=|>=|=|<|>)/.exec(q.slice(i));
      if (m) {
        out.push({ t: 'op', v: m[1]! });
        i += m[1]!.length;
        continue;
      }
      const w = /^[A-Za-z_][A-Za-z0-9_]*/.exec(q.slice(i));
      if (!w) throw new Error(`unexpected ${c}`);
      out.push({ t: 'word', v: w[0] });
      i += w[0].length;
    }
  }
  return out;
}

type Pred = (f: DriveFile) => boolean;
interface Parsed {
  pred: Pred;
  fullText: string[];
  mentionsTrashed: boolean;
}

function words(s: string): string[] {
  return s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

function fullTextMatch(f: DriveFile, term: string): boolean {
  const hay = words(`${f.name} ${f.text}`);
  const t = term.trim();
  if (t.length >= 2 && t.startsWith('"') && t.endsWith('"')) {
    const phrase = words(t.slice(1, -1));
    if (!phrase.length) return false;
    for (let i = 0; i + phrase.length <= hay.length; i++) if (phrase.every((w, k) => hay[i + k] === w)) return true;
    return false;
  }
  const want = words(t);
  return want.length > 0 && want.every((w) => hay.includes(w));
}

export function parseQuery(q: string, me: string): Parsed {
  const toks = tokenize(q);
  let i = 0;
  const fullText: string[] = [];
  let mentionsTrashed = false;
  const peekWord = (v: string) => toks[i]?.t === 'word' && (toks[i] as { v: string }).v.toLowerCase() === v;
  const expect = <T extends Token['t']>(t: T): Extract<Token, { t: T }> => {
    const tok = toks[i++];
    if (!tok || tok.t !== t) throw new Error(`expected ${t}`);
    return tok as Extract<Token, { t: T }>;
  };
  const bool = (): boolean => {
    const w = expect('word').v;
    if (w !== 'true' && w !== 'false') throw new Error('expected true or false');
    return w === 'true';
  };
  const or = (): Pred => {
    let p = and();
    while (peekWord('or')) {
      i++;
      const a = p;
      const b = and();
      p = (f) => a(f) || b(f);
    }
    return p;
  };
  const and = (): Pred => {
    let p = unary();
    while (peekWord('and')) {
      i++;
      const a = p;
      const b = unary();
      p = (f) => a(f) && b(f);
    }
    return p;
  };
  const unary = (): Pred => {
    if (peekWord('not')) {
      i++;
      const p = unary();
      return (f) => !p(f);
    }
    if (toks[i]?.t === '(') {
      i++;
      const p = or();
      expect(')');
      return p;
    }
    return term();
  };
  const term = (): Pred => {
    const first = toks[i++];
    if (!first) throw new Error('unexpected end');
    if (first.t === 'str') {
      const w = expect('word').v;
      if (w !== 'in') throw new Error('expected in');
      const coll = expect('word').v;
      const value = first.v;
      if (coll === 'parents') return (f) => f.parents.includes(value);
      if (coll === 'owners') return (f) => f.ownerEmail === (value === 'me' ? me : value);
      throw new Error(`unknown collection ${coll}`);
    }
    if (first.t !== 'word') throw new Error('expected a field');
    const field = first.v;
    const opTok = toks[i++];
    const op = opTok?.t === 'op' ? opTok.v : opTok?.t === 'word' ? opTok.v : undefined;
    if (!op) throw new Error('expected an operator');
    switch (field) {
      case 'fullText': {
        if (op !== 'contains') throw new Error('fullText takes contains');
        const v = expect('str').v;
        fullText.push(v);
        return (f) => fullTextMatch(f, v);
      }
      case 'name': {
        const v = expect('str').v;
        if (op === 'contains')
          return (f) =>
            words(f.name).some((w) => w.startsWith(v.toLowerCase())) ||
            f.name.toLowerCase().startsWith(v.toLowerCase());
        if (op === '=') return (f) => f.name === v;
        if (op === '!=') return (f) => f.name !== v;
        throw new Error('bad operator for name');
      }
      case 'mimeType': {
        const v = expect('str').v;
        if (op === '=') return (f) => f.mimeType === v;
        if (op === '!=') return (f) => f.mimeType !== v;
        if (op === 'contains') return (f) => f.mimeType.includes(v);
        throw new Error('bad operator for mimeType');
      }
      case 'trashed':
      case 'starred': {
        if (op !== '=' && op !== '!=') throw new Error(`bad operator for ${field}`);
        if (field === 'trashed') mentionsTrashed = true;
        const v = bool();
        return (f) => (f[field] === v) === (op === '=');
      }
      case 'createdTime':
      case 'modifiedTime': {
        const v = Date.parse(expect('str').v);
        if (Number.isNaN(v)) throw new Error('bad date');
        const cmp: Record<string, (a: number) => boolean> = {
          '<': (a) => a < v,
          '<=': (a) => a <= v,
          '>': (a) => a > v,
          '>=': (a) => a >= v,
          '=': (a) => a === v,
          '!=': (a) => a !== v,
        };
        const c = cmp[op];
        if (!c) throw new Error('bad operator for a time');
        return (f) => c(Date.parse(f[field]));
      }
      default:
        throw new Error(`unknown field ${field}`);
    }
  };
  const pred = or();
  if (i !== toks.length) throw new Error('trailing tokens');
  return { pred, fullText, mentionsTrashed };
}

// ----------------------------------------------------------------------------------------------------------
// the fake
// ----------------------------------------------------------------------------------------------------------

export class FakeDrive {
  readonly files = new Map<string, DriveFile>();
  readonly requests: ReceivedRequest[] = [];
  /** The changes feed, oldest first: the change at index i has the page token FIRST_CHANGE + i. */
  readonly changes: DriveChange[] = [];
  /** Every page token this fake answered, and as what: a pageToken it did not issue is refused. */
  readonly issuedTokens = new Map<string, 'startPageToken' | 'nextPageToken' | 'newStartPageToken'>();
  /** What the last upload received. */
  lastUpload?: {
    query: Record<string, string>;
    contentType?: string;
    contentLength?: string;
    transferEncoding?: string;
    bytes: number;
    sha256: string;
  };
  readonly dir = mkdtempSync(join(tmpdir(), 'fake-drive-'));
  readonly me = 'owner@example.com';
  private listening!: Listening;
  private seq = 0;

  constructor(private readonly oauth: FakeOAuthServer) {}

  get url(): string {
    return this.listening.url;
  }

  newId(): string {
    return `1${randomBytes(12).toString('base64url')}${(this.seq++).toString(36)}`;
  }

  /** Adds a file; `content` (string or bytes) is written to disk and indexed when it is text. */
  addFile(p: Partial<DriveFile> & { name: string; mimeType: string; content?: string | Buffer }): DriveFile {
    const now = new Date(Date.UTC(2026, 0, 1) + this.files.size * 60_000).toISOString();
    const f: DriveFile = {
      id: p.id ?? this.newId(),
      name: p.name,
      mimeType: p.mimeType,
      createdTime: p.createdTime ?? now,
      modifiedTime: p.modifiedTime ?? p.createdTime ?? now,
      parents: p.parents ?? ['root'],
      ownerEmail: p.ownerEmail ?? this.me,
      trashed: p.trashed ?? false,
      starred: p.starred ?? false,
      driveId: p.driveId,
      text: p.text ?? (typeof p.content === 'string' ? p.content : ''),
    };
    if (p.content !== undefined) {
      const bytes = typeof p.content === 'string' ? Buffer.from(p.content, 'utf8') : p.content;
      f.contentPath = join(this.dir, f.id);
      writeFileSync(f.contentPath, bytes);
      f.size = bytes.length;
      f.md5 = createHash('md5').update(bytes).digest('hex');
      f.sha256 = createHash('sha256').update(bytes).digest('hex');
    }
    this.files.set(f.id, f);
    this.recordChange(f, false);
    return f;
  }

  /** Changes a file (name, trashed, …): its modifiedTime moves on and the feed gets a change. */
  updateFile(id: string, patch: Partial<Omit<DriveFile, 'id'>>): DriveFile {
    const f = this.files.get(id);
    if (!f) throw new Error(`no file ${id}`);
    Object.assign(f, patch, { modifiedTime: patch.modifiedTime ?? new Date().toISOString() });
    this.recordChange(f, false);
    return f;
  }

  /** Deletes a file for good: the feed gets a removal (no file resource). */
  removeFile(id: string): void {
    const f = this.files.get(id);
    if (!f) throw new Error(`no file ${id}`);
    this.files.delete(id);
    this.recordChange(f, true);
  }

  /** The page token of the next change, as changes.getStartPageToken answers it. */
  get startPageToken(): string {
    return String(FIRST_CHANGE + this.changes.length);
  }

  private recordChange(f: DriveFile, removed: boolean): void {
    // Times strictly increase, at Drive's millisecond precision.
    const last = this.changes.length ? Date.parse(this.changes.at(-1)!.time) : 0;
    const time = new Date(Math.max(Date.now(), last + 1)).toISOString();
    this.changes.push({ fileId: f.id, time, removed, ...(f.driveId ? { driveId: f.driveId } : {}) });
  }

  /** The File resource with every field the fake knows. */
  resource(f: DriveFile): Record<string, unknown> {
    const native = f.mimeType.startsWith('application/vnd.google-apps.');
    const kind =
      f.mimeType === FOLDER
        ? 'folders'
        : f.mimeType === GOOGLE_DOC
          ? 'document'
          : f.mimeType === GOOGLE_SHEET
            ? 'spreadsheets'
            : 'file';
    return {
      kind: 'drive#file',
      id: f.id,
      name: f.name,
      mimeType: f.mimeType,
      starred: f.starred,
      trashed: f.trashed,
      parents: f.parents,
      owners: [
        {
          kind: 'drive#user',
          displayName: f.ownerEmail.split('@')[0],
          emailAddress: f.ownerEmail,
          me: f.ownerEmail === this.me,
        },
      ],
      createdTime: f.createdTime,
      modifiedTime: f.modifiedTime,
      webViewLink:
        f.mimeType === FOLDER
          ? `https://drive.google.com/drive/folders/${f.id}`
          : native
            ? `https://docs.google.com/${kind}/d/${f.id}/edit`
            : `https://drive.google.com/file/d/${f.id}/view`,
      ...(f.driveId ? { driveId: f.driveId } : {}),
      ...(f.size !== undefined && !native
        ? { size: String(f.size), md5Checksum: f.md5, quotaBytesUsed: String(f.size) }
        : { quotaBytesUsed: '0' }),
    };
  }

  async start(): Promise<this> {
    const app = express();
    app.disable('x-powered-by');
    app.use((req, _res, next) => {
      this.requests.push({
        method: req.method,
        path: req.path,
        query: { ...(req.query as Record<string, string>) },
        headers: { ...req.headers },
      });
      next();
    });
    const handle =
      (fn: (req: Request, res: Response) => Promise<void> | void) =>
      async (req: Request, res: Response): Promise<void> => {
        try {
          await fn(req, res);
        } catch (e) {
          if (e instanceof DriveError) {
            if (!res.headersSent) res.status(e.status).json(e.body());
            return;
          }
          throw e;
        }
      };
    app.get(
      '/drive/v3/changes/startPageToken',
      handle((req, res) => this.startToken(req, res)),
    );
    app.get(
      '/drive/v3/changes',
      handle((req, res) => this.listChanges(req, res)),
    );
    app.get(
      '/drive/v3/files',
      handle((req, res) => this.list(req, res)),
    );
    app.get(
      '/drive/v3/files/:fileId',
      handle((req, res) => this.get(req, res)),
    );
    app.post(
      '/upload/drive/v3/files',
      handle((req, res) => this.upload(req, res)),
    );
    app.use((req, res) =>
      res.status(404).json(new DriveError(404, `Not Found: ${req.method} ${req.path}`, 'notFound').body()),
    );
    this.listening = await listen(app);
    return this;
  }

  async close(): Promise<void> {
    await this.listening.close();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private authorize(req: Request, scopes: string[]): void {
    const grant = this.oauth.validate(req.headers.authorization);
    if (!/^Bearer /.test(req.headers.authorization ?? '') || !grant) {
      throw new DriveError(
        401,
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
        'authError',
        'Authorization',
        'header',
      );
    }
    const granted = grant.scope.split(' ');
    if (!scopes.some((s) => granted.includes(s)))
      throw new DriveError(403, 'Request had insufficient authentication scopes.', 'insufficientPermissions');
  }

  private query(req: Request, allowed: Set<string>): Record<string, string> {
    const q: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.query)) {
      if (!allowed.has(k)) throw new DriveError(400, `Unknown parameter: ${k}`, 'invalidParameter', k);
      if (typeof v !== 'string')
        throw new DriveError(400, `Parameter ${k} given more than once`, 'invalidParameter', k);
      q[k] = v;
    }
    return q;
  }

  private flag(q: Record<string, string>, name: string): boolean {
    const v = q[name];
    if (v === undefined) return false;
    if (v !== 'true' && v !== 'false') throw invalidValue(name);
    return v === 'true';
  }

  private list(req: Request, res: Response): void {
    this.authorize(req, READ_METADATA);
    const q = this.query(req, LIST_PARAMS);
    const sel = selection(
      q.fields,
      FILE_LIST_SCHEMA,
      'kind,nextPageToken,incompleteSearch,files(kind,id,name,mimeType)',
    );
    const supportsAll = this.flag(q, 'supportsAllDrives');
    const includeAll = this.flag(q, 'includeItemsFromAllDrives');
    if (includeAll && !supportsAll) {
      throw new DriveError(
        403,
        'The includeItemsFromAllDrives parameter can only be set to true when supportsAllDrives is also set to true.',
        'teamDrivesParameterNotSupported',
        'includeItemsFromAllDrives',
      );
    }
    const corpora = q.corpora ?? 'user';
    if (!['user', 'domain', 'drive', 'allDrives'].includes(corpora)) throw invalidValue('corpora');
    if (corpora === 'allDrives' && !includeAll) {
      throw new DriveError(
        400,
        'The includeItemsFromAllDrives parameter must be set to true when corpora is allDrives.',
        'invalid',
        'corpora',
      );
    }
    const pageSize = q.pageSize === undefined ? 100 : Number(q.pageSize);
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000) {
      throw new DriveError(
        400,
        `Invalid value '${q.pageSize}'. Values must be within the range: [1, 1000]`,
        'invalid',
        'pageSize',
      );
    }
    let parsed: Parsed = { pred: () => true, fullText: [], mentionsTrashed: false };
    if (q.q !== undefined) {
      try {
        parsed = parseQuery(q.q, this.me);
      } catch {
        throw invalidValue('q');
      }
    }
    let sort: Array<{ key: string; desc: boolean }> = [];
    if (q.orderBy !== undefined) {
      if (parsed.fullText.length) {
        throw new DriveError(
          400,
          'Sorting is not supported for queries with fullText terms. Results are always in descending relevance order.',
          'invalid',
          'orderBy',
        );
      }
      sort = q.orderBy.split(',').map((part) => {
        const m = /^\s*([A-Za-z_]+)(?:\s+(desc))?\s*$/.exec(part);
        if (!m || !SORT_KEYS.has(m[1]!)) throw invalidValue('orderBy');
        return { key: m[1]!, desc: m[2] === 'desc' };
      });
    }
    const withSharedDrives = supportsAll && includeAll && corpora === 'allDrives';
    let found = [...this.files.values()].filter((f) => (withSharedDrives || !f.driveId) && parsed.pred(f));
    const value = (f: DriveFile, key: string): string | number => {
      switch (key) {
        case 'name':
        case 'name_natural':
          return f.name.toLowerCase();
        case 'createdTime':
          return f.createdTime;
        case 'folder':
          return f.mimeType === FOLDER ? 0 : 1;
        case 'starred':
          return f.starred ? 0 : 1;
        case 'quotaBytesUsed':
          return f.size ?? 0;
        default:
          return f.modifiedTime;
      }
    };
    if (parsed.fullText.length) {
      const score = (f: DriveFile) =>
        parsed.fullText.reduce(
          (n, t) => n + words(`${f.name} ${f.text}`).filter((w) => words(t).includes(w)).length,
          0,
        );
      found.sort(
        (a, b) => score(b) - score(a) || b.modifiedTime.localeCompare(a.modifiedTime) || a.id.localeCompare(b.id),
      );
    } else {
      const keys = sort.length ? sort : [{ key: 'modifiedTime', desc: true }];
      found.sort((a, b) => {
        for (const { key, desc } of keys) {
          const x = value(a, key);
          const y = value(b, key);
          if (x !== y) return (x < y ? -1 : 1) * (desc ? -1 : 1);
        }
        return a.id.localeCompare(b.id);
      });
    }
    const fingerprint = createHash('sha256')
      .update(JSON.stringify([q.q, q.orderBy, corpora, withSharedDrives]))
      .digest('hex')
      .slice(0, 12);
    let offset = 0;
    if (q.pageToken !== undefined) {
      try {
        const t = JSON.parse(Buffer.from(q.pageToken, 'base64url').toString()) as { o: number; k: string };
        if (t.k !== fingerprint || !Number.isInteger(t.o)) throw new Error();
        offset = t.o;
      } catch {
        throw invalidValue('pageToken');
      }
    }
    const page = found.slice(offset, offset + pageSize);
    const next =
      offset + pageSize < found.length
        ? Buffer.from(JSON.stringify({ o: offset + pageSize, k: fingerprint })).toString('base64url')
        : undefined;
    found = page;
    const body = {
      kind: 'drive#fileList',
      ...(next ? { nextPageToken: next } : {}),
      incompleteSearch: false,
      files: found.map((f) => this.resource(f)),
    };
    res.json(project(body, sel));
  }

  private startToken(req: Request, res: Response): void {
    this.authorize(req, READ_METADATA);
    const q = this.query(req, START_TOKEN_PARAMS);
    const sel = selection(q.fields, START_TOKEN_SCHEMA, 'kind,startPageToken');
    this.flag(q, 'supportsAllDrives');
    if (q.driveId !== undefined)
      throw new DriveError(404, `Shared drive not found: ${q.driveId}`, 'notFound', 'driveId');
    const token = this.startPageToken;
    if (!this.issuedTokens.has(token)) this.issuedTokens.set(token, 'startPageToken');
    res.json(project({ kind: 'drive#startPageToken', startPageToken: token }, sel));
  }

  private listChanges(req: Request, res: Response): void {
    this.authorize(req, READ_METADATA);
    const q = this.query(req, CHANGES_PARAMS);
    if (q.pageToken === undefined) throw new DriveError(400, 'Required parameter: pageToken', 'required', 'pageToken');
    const sel = selection(
      q.fields,
      CHANGE_LIST_SCHEMA,
      'kind,nextPageToken,newStartPageToken,changes(kind,changeType,time,removed,fileId,file(kind,id,name,mimeType))',
    );
    const supportsAll = this.flag(q, 'supportsAllDrives');
    const includeAll = this.flag(q, 'includeItemsFromAllDrives');
    if (includeAll && !supportsAll) {
      throw new DriveError(
        403,
        'The includeItemsFromAllDrives parameter can only be set to true when supportsAllDrives is also set to true.',
        'teamDrivesParameterNotSupported',
        'includeItemsFromAllDrives',
      );
    }
    const includeRemoved = q.includeRemoved === undefined ? true : this.flag(q, 'includeRemoved');
    this.flag(q, 'includeCorpusRemovals');
    this.flag(q, 'restrictToMyDrive');
    if (q.driveId !== undefined)
      throw new DriveError(404, `Shared drive not found: ${q.driveId}`, 'notFound', 'driveId');
    const pageSize = q.pageSize === undefined ? 100 : Number(q.pageSize);
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000) {
      throw new DriveError(
        400,
        `Invalid value '${q.pageSize}'. Values must be within the range: [1, 1000]`,
        'invalid',
        'pageSize',
      );
    }
    if (!this.issuedTokens.has(q.pageToken)) throw invalidValue('pageToken');
    const from = Number(q.pageToken) - FIRST_CHANGE;
    if (from < 0 || from > this.changes.length) throw invalidValue('pageToken');
    const out: Array<Record<string, unknown>> = [];
    let at = from;
    for (; at < this.changes.length && out.length < pageSize; at++) {
      const c = this.changes[at]!;
      if (c.driveId && !includeAll) continue;
      if (c.removed && !includeRemoved) continue;
      const f = c.removed ? undefined : this.files.get(c.fileId);
      out.push({
        kind: 'drive#change',
        changeType: 'file',
        time: c.time,
        removed: f === undefined,
        fileId: c.fileId,
        ...(f ? { file: this.resource(f) } : {}),
        ...(c.driveId ? { driveId: c.driveId } : {}),
      });
    }
    const more = at < this.changes.length;
    const token = more ? String(FIRST_CHANGE + at) : this.startPageToken;
    if (!this.issuedTokens.has(token)) this.issuedTokens.set(token, more ? 'nextPageToken' : 'newStartPageToken');
    const body = {
      kind: 'drive#changeList',
      ...(more ? { nextPageToken: token } : { newStartPageToken: token }),
      changes: out,
    };
    res.json(project(body, sel));
  }

  private find(id: string, supportsAll: boolean): DriveFile {
    const f = this.files.get(id);
    if (!f || (f.driveId && !supportsAll)) throw new DriveError(404, `File not found: ${id}.`, 'notFound', 'fileId');
    return f;
  }

  private async get(req: Request, res: Response): Promise<void> {
    const q = this.query(req, GET_PARAMS);
    const alt = q.alt ?? 'json';
    if (alt !== 'json' && alt !== 'media') throw invalidValue('alt');
    this.authorize(req, alt === 'media' ? READ_CONTENT : READ_METADATA);
    const f = this.find(String(req.params.fileId), this.flag(q, 'supportsAllDrives'));
    if (alt === 'json') {
      const sel = selection(q.fields, FILE_SCHEMA, 'kind,id,name,mimeType');
      res.json(project(this.resource(f), sel));
      return;
    }
    if (f.mimeType.startsWith('application/vnd.google-apps.') || !f.contentPath) {
      throw new DriveError(
        403,
        'Only files with binary content can be downloaded. Use Export with Docs Editors files.',
        'fileNotDownloadable',
        'alt',
      );
    }
    res.writeHead(200, {
      'content-type': f.mimeType,
      'content-length': String(f.size),
      'x-goog-hash': `md5=${Buffer.from(f.md5!, 'hex').toString('base64')}`,
    });
    await pipeline(createReadStream(f.contentPath), res).catch((e: NodeJS.ErrnoException) => {
      // The client may stop reading (or the test end) mid-file; that is the client's business.
      if (e.code !== 'ERR_STREAM_PREMATURE_CLOSE') throw e;
    });
  }

  private async upload(req: Request, res: Response): Promise<void> {
    this.authorize(req, WRITE);
    const q = this.query(req, UPLOAD_PARAMS);
    if (q.uploadType === undefined)
      throw new DriveError(400, 'Media upload requires the uploadType parameter.', 'required', 'uploadType');
    if (q.uploadType !== 'media') {
      throw new DriveError(
        400,
        `This fake supports uploadType=media only, not ${q.uploadType}.`,
        'badRequest',
        'uploadType',
      );
    }
    const sel = selection(q.fields, FILE_SCHEMA, 'kind,id,name,mimeType');
    const id = this.newId();
    const path = join(this.dir, id);
    const sha = createHash('sha256');
    const md5 = createHash('md5');
    let bytes = 0;
    // The body is consumed as a stream: hashed and counted on its way to disk, never held in memory.
    await pipeline(
      req,
      new Transform({
        transform(chunk: Buffer, _enc, cb) {
          bytes += chunk.length;
          sha.update(chunk);
          md5.update(chunk);
          cb(null, chunk);
        },
      }),
      createWriteStream(path),
    );
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) !== bytes) {
      rmSync(path, { force: true });
      throw new DriveError(400, `Content-Length ${declared} does not match the ${bytes} bytes received.`, 'badContent');
    }
    const mimeType = String(req.headers['content-type'] ?? 'application/octet-stream')
      .split(';')[0]!
      .trim();
    const now = new Date().toISOString();
    const f: DriveFile = {
      id,
      name: 'Untitled',
      mimeType,
      createdTime: now,
      modifiedTime: now,
      parents: ['root'],
      ownerEmail: this.me,
      trashed: false,
      starred: false,
      text: '',
      contentPath: path,
      size: bytes,
      md5: md5.digest('hex'),
      sha256: sha.digest('hex'),
    };
    this.files.set(id, f);
    this.recordChange(f, false);
    this.lastUpload = {
      query: q,
      contentType: req.headers['content-type'],
      contentLength: declared,
      transferEncoding: req.headers['transfer-encoding'],
      bytes,
      sha256: f.sha256!,
    };
    res.json(project(this.resource(f), sel));
  }
}
