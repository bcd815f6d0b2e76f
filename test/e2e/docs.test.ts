/**
 * The document-editing connector end to end: client library → service → fake Docs, with docs_list_documents
 * going to the fake Drive (a second host), for every tool, dry runs, the 400 rules and the proxy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDrive, GOOGLE_DOC, GOOGLE_SHEET } from '../fakes/google-drive.ts';
import { FakeDocs, type StoredDocument } from '../fakes/google-docs.ts';
import { authorizeCapturing } from '../fakes/google-setup.ts';
import { oauthConnection, startHarness, type Harness } from '../helpers/harness.ts';
import { AnswerLog } from '../helpers/answer-check.ts';
import { failure, toolRunner } from '../helpers/tools.ts';
import { tools } from '../../generated/registry.ts';

let h: Harness;
let drive: FakeDrive;
let docs: FakeDocs;
let design: StoredDocument;
let authorizeUrl: URL;
const who = { connectionName: 'docs', identifier: 'writer-1' };
const LIST_FIELDS =
  'nextPageToken,incompleteSearch,files(id,name,mimeType,createdTime,modifiedTime,owners,webViewLink)';
const DEFAULT_QUERY = "mimeType='application/vnd.google-apps.document' and trashed=false";

// The upstream mapping is checked against the provider's own answer (response_format detailed); the concise
// answers are checked against the tool's declared output (test/helpers/answer-check.ts).
const answers = new AnswerLog('docs', () => h);
const run = toolRunner({ harness: () => h, who, responseFormat: 'detailed', answers });

/** The plain text of a Document resource's body. */
function bodyText(doc: Record<string, any>): string {
  return (doc.body.content as any[])
    .filter((c) => c.paragraph)
    .flatMap((c) => c.paragraph.elements.map((e: any) => e.textRun?.content ?? ''))
    .join('');
}

const names = (r: Record<string, any>) => (r.files as Array<{ name: string }>).map((f) => f.name);

beforeAll(async () => {
  h = await startHarness({ oauth: { rotateRefreshTokens: false } });
  drive = await new FakeDrive(h.oauth).start();
  docs = await new FakeDocs(h.oauth, drive).start();
  design = docs.addDocument('Design doc', 'Hello team\nSee the plan\n', { suggestion: { index: 7, text: 'dear ' } });
  docs.addDocument('Agenda', 'Agenda for Monday\n');
  const trashed = docs.addDocument('Old draft', 'draft\n');
  drive.files.get(trashed.id)!.trashed = true;
  drive.addFile({ name: 'Budget', mimeType: GOOGLE_SHEET });
  drive.addFile({ name: 'report.pdf', mimeType: 'application/pdf', content: 'pdf' });
  await oauthConnection(h, 'docs', 'docs', docs.url, { extra: { api_hosts: { drive: drive.url } } });
  authorizeUrl = (await authorizeCapturing(h, 'docs', 'writer-1')).authorize;
});
afterAll(async () => {
  answers.write();
  await docs?.close();
  await drive?.close();
  await h?.close();
});

describe('Google OAuth', () => {
  it('asks for the documents scope plus a Drive scope for listing, offline and with consent', () => {
    const q = authorizeUrl.searchParams;
    expect(q.get('scope')).toBe(
      'https://www.googleapis.com/auth/documents https://www.googleapis.com/auth/drive.metadata.readonly',
    );
    expect(q.get('access_type')).toBe('offline');
    expect(q.get('prompt')).toBe('consent');
    expect(q.get('include_granted_scopes')).toBe('true');
  });
});

describe('docs tools against the fake Docs and Drive', () => {
  it('docs_create_document creates a titled or untitled document that Drive then lists', async () => {
    const created = await run('docs_create_document', { title: 'Status report', schema_version: '1' });
    expect(created).toMatchObject({
      title: 'Status report',
      documentId: expect.any(String),
      revisionId: expect.any(String),
    });
    expect(docs.requests.at(-1)).toMatchObject({
      method: 'POST',
      path: '/v1/documents',
      body: { title: 'Status report' },
      query: {},
    });
    expect(drive.files.get(created.documentId)!.mimeType).toBe(GOOGLE_DOC);

    const untitled = await run('docs_create_document', {});
    expect(untitled.title).toBe('Untitled document');
    expect(docs.requests.at(-1)!.body).toEqual({});

    const listed = await run('docs_list_documents', {});
    expect(names(listed)).toEqual(
      expect.arrayContaining(['Status report', 'Untitled document', 'Design doc', 'Agenda']),
    );
  });

  it('docs_list_documents runs on the Drive host with the default query, page size and fields', async () => {
    const docsBefore = docs.requests.length;
    const listed = await run('docs_list_documents', { order_by: 'name asc' });
    expect(docs.requests.length).toBe(docsBefore);
    expect(drive.requests.at(-1)).toMatchObject({
      path: '/drive/v3/files',
      query: { q: DEFAULT_QUERY, orderBy: 'name', pageSize: '100', fields: LIST_FIELDS },
    });
    // Documents only, none in the trash, sorted by name.
    expect(names(listed)).toEqual(['Agenda', 'Design doc', 'Status report', 'Untitled document']);
    expect(listed.files[0]).toMatchObject({
      mimeType: GOOGLE_DOC,
      webViewLink: expect.stringContaining('/document/d/'),
      owners: [expect.objectContaining({ emailAddress: drive.me })],
    });

    const desc = await run('docs_list_documents', { order_by: 'name desc' });
    expect(names(desc)).toEqual(['Untitled document', 'Status report', 'Design doc', 'Agenda']);
  });

  it('docs_list_documents pages with page_size and page_token, and takes a query that replaces the default', async () => {
    const seen: string[] = [];
    let token: string | undefined;
    do {
      const page = await run('docs_list_documents', {
        page_size: 3,
        order_by: 'createdTime',
        ...(token ? { page_token: token } : {}),
      });
      expect(page.files.length).toBeLessThanOrEqual(3);
      seen.push(...names(page));
      token = page.nextPageToken;
    } while (token);
    expect(seen).toEqual(['Design doc', 'Agenda', 'Status report', 'Untitled document']);

    const byName = await run('docs_list_documents', { query: `mimeType = '${GOOGLE_DOC}' and name contains 'Agen'` });
    expect(names(byName)).toEqual(['Agenda']);
    const everything = await run('docs_list_documents', { query: 'trashed = true' });
    expect(names(everything)).toEqual(['Old draft']);
  });

  it("returns Drive's refusal of a sorted fullText query as a provider error", async () => {
    const e = await failure(
      run('docs_list_documents', { query: "fullText contains 'plan'", order_by: 'modifiedTime desc' }),
    );
    expect(e.isProviderError).toBe(true);
    expect(e.status).toBe(400);
    expect((e.providerBody as any).error.errors[0].location).toBe('orderBy');
  });

  it('docs_read_document honours suggestions_view_mode', async () => {
    const inline = await run('docs_read_document', {
      document_id: design.id,
      suggestions_view_mode: 'SUGGESTIONS_INLINE',
    });
    expect(bodyText(inline)).toBe('Hello dear team\nSee the plan\n');
    const runs = inline.body.content[1].paragraph.elements;
    expect(
      runs.map((r: any) => [r.textRun.content, r.textRun.suggestedInsertionIds ?? null, r.startIndex, r.endIndex]),
    ).toEqual([
      ['Hello ', null, 1, 7],
      ['dear ', [design.suggestion!.id], 7, 12],
      ['team\n', null, 12, 17],
    ]);
    expect(docs.requests.at(-1)!.query).toEqual({ suggestionsViewMode: 'SUGGESTIONS_INLINE' });

    const accepted = await run('docs_read_document', {
      document_id: design.id,
      suggestions_view_mode: 'PREVIEW_SUGGESTIONS_ACCEPTED',
    });
    expect(bodyText(accepted)).toBe('Hello dear team\nSee the plan\n');
    expect(JSON.stringify(accepted.body)).not.toContain('suggestedInsertionIds');

    const without = await run('docs_read_document', {
      document_id: design.id,
      suggestions_view_mode: 'PREVIEW_WITHOUT_SUGGESTIONS',
      tool_version: '1',
    });
    expect(bodyText(without)).toBe('Hello team\nSee the plan\n');
    expect(without).toMatchObject({
      documentId: design.id,
      title: 'Design doc',
      suggestionsViewMode: 'PREVIEW_WITHOUT_SUGGESTIONS',
    });
    // The fake refuses unknown query parameters, so the version selectors provably stayed behind.
    expect(docs.requests.at(-1)!.query).toEqual({ suggestionsViewMode: 'PREVIEW_WITHOUT_SUGGESTIONS' });

    const plain = await run('docs_read_document', { document_id: design.id });
    expect(docs.requests.at(-1)!.query).toEqual({});
    expect(plain.suggestionsViewMode).toBe('SUGGESTIONS_INLINE');

    const missing = await failure(run('docs_read_document', { document_id: 'no-such-doc' }));
    expect(missing.status).toBe(404);
    expect(missing.providerBody).toEqual({
      error: { code: 404, message: 'Requested entity was not found.', status: 'NOT_FOUND' },
    });
  });

  it('docs_update_document applies insertText and replaceAllText, with writeControl sent as writeControl', async () => {
    const created = await run('docs_create_document', { title: 'Letter' });
    const id = created.documentId as string;
    const rev0 = created.revisionId as string;
    const updated = await run('docs_update_document', {
      document_id: id,
      requests: [
        { insertText: { location: { index: 1 }, text: 'Dear {{name}},\n' } },
        { insertText: { endOfSegmentLocation: {}, text: 'Regards, {{name}}' } },
        { replaceAllText: { containsText: { text: '{{NAME}}', matchCase: false }, replaceText: 'Ada' } },
      ],
      write_control: { requiredRevisionId: rev0 },
    });
    expect(updated.documentId).toBe(id);
    expect(updated.replies).toEqual([{}, {}, { replaceAllText: { occurrencesChanged: 2 } }]);
    expect(docs.requests.at(-1)).toMatchObject({ path: `/v1/documents/${id}:batchUpdate` });
    expect(docs.requests.at(-1)!.body).toHaveProperty('writeControl', { requiredRevisionId: rev0 });
    const rev1 = updated.writeControl.requiredRevisionId as string;
    expect(rev1).not.toBe(rev0);

    const read = await run('docs_read_document', { document_id: id });
    expect(bodyText(read)).toBe('Dear Ada,\nRegards, Ada\n');
    expect(read.revisionId).toBe(rev1);

    // A stale required revision is refused and changes nothing.
    const stale = await failure(
      run('docs_update_document', {
        document_id: id,
        requests: [{ insertText: { location: { index: 1 }, text: 'X' } }],
        write_control: { requiredRevisionId: rev0 },
      }),
    );
    expect(stale.isProviderError).toBe(true);
    expect(stale.status).toBe(400);
    expect((stale.providerBody as any).error.status).toBe('FAILED_PRECONDITION');

    // The batch is atomic: the second request is out of range, so the first is not applied either.
    const atomic = await failure(
      run('docs_update_document', {
        document_id: id,
        requests: [
          { insertText: { location: { index: 1 }, text: 'X' } },
          { deleteContentRange: { range: { startIndex: 1, endIndex: 500 } } },
        ],
      }),
    );
    expect(atomic.status).toBe(400);
    expect((atomic.providerBody as any).error.status).toBe('INVALID_ARGUMENT');
    expect(bodyText(await run('docs_read_document', { document_id: id }))).toBe('Dear Ada,\nRegards, Ada\n');

    // targetRevisionId: an older revision is merged onto; deleteContentRange removes "Dear " (indices 1-6).
    const merged = await run('docs_update_document', {
      document_id: id,
      requests: [{ deleteContentRange: { range: { startIndex: 1, endIndex: 6 } } }],
      write_control: { targetRevisionId: rev0 },
    });
    expect(merged.replies).toEqual([{}]);
    expect(docs.documents.get(id)!.text).toBe('Ada,\nRegards, Ada\n');
  });

  it('covers every docs tool of the registry', () => {
    const docsTools = [...tools.values()]
      .filter((t) => t.connector === 'docs')
      .map((t) => t.name)
      .sort();
    expect(docsTools).toEqual([
      'docs_create_document',
      'docs_list_documents',
      'docs_read_document',
      'docs_update_document',
    ]);
    const seen = new Set(
      docs.requests.map((r) => `${r.method} ${r.path.replace(/\/documents\/[^/:]+/, '/documents/:id')}`),
    );
    expect(seen).toContain('POST /v1/documents');
    expect(seen).toContain('GET /v1/documents/:id');
    expect(seen).toContain('POST /v1/documents/:id:batchUpdate');
    expect(drive.requests.some((r) => r.method === 'GET' && r.path === '/drive/v3/files')).toBe(true);
  });
});

describe('dry runs show the exact request and send nothing', () => {
  it('for every docs tool, listing on the Drive host', async () => {
    const before = docs.requests.length + drive.requests.length;
    const dry = async (toolName: string, toolInput: Record<string, unknown>) => {
      const { data } = await h.client.executeTool({
        toolName: toolName as never,
        toolInput: toolInput as never,
        dryRun: true,
        ...who,
      });
      const reqs = (
        data as { requests: Array<{ method: string; url: string; headers: Record<string, string>; body?: unknown }> }
      ).requests;
      expect(reqs).toHaveLength(1);
      expect(reqs[0]!.headers.authorization).toBe('Bearer [REDACTED]');
      return reqs[0]!;
    };
    expect(await dry('docs_create_document', { title: 'T', schema_version: '1' })).toMatchObject({
      method: 'POST',
      url: `${docs.url}/v1/documents`,
      body: { title: 'T' },
    });
    expect((await dry('docs_list_documents', { page_size: 5 })).url).toBe(
      `${drive.url}/drive/v3/files?q=mimeType%3D'application/vnd.google-apps.document'%20and%20trashed%3Dfalse&pageSize=5&fields=${LIST_FIELDS}`,
    );
    expect(
      (
        await dry('docs_read_document', {
          document_id: 'd/1',
          suggestions_view_mode: 'SUGGESTIONS_INLINE',
          tool_version: '1',
        })
      ).url,
    ).toBe(`${docs.url}/v1/documents/d%2F1?suggestionsViewMode=SUGGESTIONS_INLINE`);
    const update = await dry('docs_update_document', {
      document_id: 'abc',
      requests: [{ insertText: { location: { index: 1 }, text: 'x' } }],
      write_control: { targetRevisionId: 'r1' },
    });
    expect(update).toMatchObject({
      method: 'POST',
      url: `${docs.url}/v1/documents/abc:batchUpdate`,
      headers: { 'content-type': 'application/json' },
      body: {
        requests: [{ insertText: { location: { index: 1 }, text: 'x' } }],
        writeControl: { targetRevisionId: 'r1' },
      },
    });
    expect(docs.requests.length + drive.requests.length).toBe(before);
  });
});

describe('bad input is a 400 naming the field, before any upstream call', () => {
  it('refuses missing, empty, out-of-range and unknown values', async () => {
    const before = docs.requests.length + drive.requests.length;
    const fields = async (toolName: string, input: Record<string, unknown>) => {
      const e = await failure(run(toolName, input));
      expect(e.status).toBe(400);
      expect(e.code).toBe('invalid_input');
      return Object.fromEntries(e.details.map((d) => [d.field, d.message]));
    };
    expect(await fields('docs_update_document', {})).toEqual({ document_id: 'is required', requests: 'is required' });
    expect(await fields('docs_update_document', { document_id: 'a', requests: [] })).toEqual({
      requests: 'must have at least 1 item(s)',
    });
    expect(await fields('docs_update_document', { document_id: 'a', requests: ['insertText'] })).toEqual({
      'requests[0]': 'must be an object',
    });
    expect(
      await fields('docs_update_document', {
        document_id: 'a',
        requests: [{}],
        write_control: { required_revision_id: 'r' },
      }),
    ).toEqual({
      'write_control.required_revision_id': 'is not an allowed field here',
    });
    expect(await fields('docs_read_document', { document_id: 'a', suggestions_view_mode: 'INLINE' })).toEqual({
      suggestions_view_mode:
        'must be one of: DEFAULT_FOR_CURRENT_ACCESS, SUGGESTIONS_INLINE, PREVIEW_SUGGESTIONS_ACCEPTED, PREVIEW_WITHOUT_SUGGESTIONS',
    });
    expect(await fields('docs_read_document', { document_id: 'a', schema_version: '2' })).toEqual({
      schema_version: 'must be one of: 1',
    });
    expect(await fields('docs_create_document', { title: 5, tool_version: '1.0' })).toEqual({
      title: 'must be a string',
      tool_version: 'must be one of: 1',
    });
    expect(await fields('docs_list_documents', { page_size: 1001 })).toEqual({ page_size: 'must be at most 1000' });
    expect(await fields('docs_list_documents', { page_size: 0 })).toEqual({ page_size: 'must be at least 1' });
    expect((await fields('docs_list_documents', { order_by: 'title asc' })).order_by).toMatch(
      /^value "title asc" does not match/,
    );
    expect((await fields('docs_list_documents', { schema_version: '1' })).schema_version).toMatch(
      /^is not a parameter of docs_list_documents/,
    );
    expect(docs.requests.length + drive.requests.length).toBe(before);
  });
});

describe('proxy on the docs connection', () => {
  it('reaches the document API root', async () => {
    const res = await h.client.request({
      ...who,
      path: `/v1/documents/${design.id}`,
      queryParams: { suggestionsViewMode: 'PREVIEW_WITHOUT_SUGGESTIONS' },
    });
    expect(res.status).toBe(200);
    expect(bodyText(res.data as Record<string, any>)).toBe('Hello team\nSee the plan\n');
    const bad = await h.client.request({
      ...who,
      path: `/v1/documents/${design.id}`,
      queryParams: { schema_version: '1' },
    });
    expect(bad.status).toBe(400);
    expect((bad.data as any).error.status).toBe('INVALID_ARGUMENT');
  });
});
