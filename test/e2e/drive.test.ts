/**
 * The file-storage connector end to end: client library → service → fake Drive (and the fake Google OAuth
 * server), for every tool, dry runs, the 400 rules, file transfer through the proxy and token refresh without
 * rotation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { FakeDrive, GOOGLE_DOC } from '../fakes/google-drive.ts';
import { authorizeCapturing, seedDrive, type DriveSeed } from '../fakes/google-setup.ts';
import { oauthConnection, startHarness, type Harness } from '../helpers/harness.ts';
import { AnswerLog } from '../helpers/answer-check.ts';
import { failure, toolRunner } from '../helpers/tools.ts';
import { tools } from '../../generated/registry.ts';

let h: Harness;
let drive: FakeDrive;
let seed: DriveSeed;
let authorizeUrl: URL;
const who = { connectionName: 'drive', identifier: 'user-1' };
const LIST_FIELDS =
  'nextPageToken,incompleteSearch,files(id,name,mimeType,size,createdTime,modifiedTime,parents,webViewLink)';

// The upstream mapping is checked against the provider's own answer (response_format detailed); each answer is also
// checked against the tool's declared output (test/helpers/answer-check.ts).
const answers = new AnswerLog('drive', () => h);
const run = toolRunner({ harness: () => h, who, responseFormat: 'detailed', answers });

const lastQuery = () => drive.requests.at(-1)!.query;
const names = (r: Record<string, any>) => (r.files as Array<{ name: string }>).map((f) => f.name);

beforeAll(async () => {
  h = await startHarness({ oauth: { rotateRefreshTokens: false } });
  drive = await new FakeDrive(h.oauth).start();
  seed = seedDrive(drive);
  await oauthConnection(h, 'drive', 'drive', drive.url);
  authorizeUrl = (await authorizeCapturing(h, 'drive', 'user-1')).authorize;
});
afterAll(async () => {
  answers.write();
  await drive?.close();
  await h?.close();
});

describe('Google OAuth', () => {
  it("sends Google's authorize parameters and the drive scopes, and the account becomes ACTIVE", async () => {
    const q = authorizeUrl.searchParams;
    expect(q.get('access_type')).toBe('offline');
    expect(q.get('prompt')).toBe('consent');
    expect(q.get('include_granted_scopes')).toBe('true');
    expect(q.get('response_type')).toBe('code');
    expect(q.get('code_challenge_method')).toBe('S256');
    expect(q.get('scope')).toBe(
      'https://www.googleapis.com/auth/drive.readonly https://www.googleapis.com/auth/drive.file',
    );
    const account = await h.client.getOrCreateConnectedAccount(who);
    expect(account.status).toBe('ACTIVE');
  });

  it('refreshes after a 401 and keeps the refresh token Google does not rotate', async () => {
    const refreshes = () => h.oauth.tokenRequests.filter((r) => r.grant_type === 'refresh_token');
    const before = refreshes().length;
    h.oauth.expireAccessTokens();
    expect((await run('drive_get_file_metadata', { file_id: seed.notes.id })).name).toBe('notes.txt');
    h.oauth.expireAccessTokens();
    expect((await run('drive_get_file_metadata', { file_id: seed.pdf.id })).name).toBe('Q3 report.pdf');
    const made = refreshes().slice(before);
    expect(made).toHaveLength(2);
    // No new refresh token came back the first time, so the second refresh used the same (still valid) one.
    expect(made[1]!.refresh_token).toBe(made[0]!.refresh_token);
    expect(h.oauth.liveRefreshTokens()).toContain(made[0]!.refresh_token);
  });
});

describe('drive tools against the fake Drive', () => {
  it('drive_get_file_metadata returns name, MIME type, size and creation time by default', async () => {
    const meta = await run('drive_get_file_metadata', { file_id: seed.pdf.id });
    expect(meta).toMatchObject({
      id: seed.pdf.id,
      name: 'Q3 report.pdf',
      mimeType: 'application/pdf',
      size: String(seed.pdf.size),
      createdTime: seed.pdf.createdTime,
      parents: [seed.reports.id],
    });
    expect(meta.owners[0].emailAddress).toBe(drive.me);
    expect(lastQuery()).toEqual({
      fields: 'id,name,mimeType,size,createdTime,modifiedTime,parents,owners,webViewLink',
    });

    const folder = await run('drive_get_file_metadata', {
      file_id: seed.reports.id,
      schema_version: '1',
      tool_version: '1',
    });
    expect(folder.mimeType).toBe('application/vnd.google-apps.folder');
    expect(folder.size).toBeUndefined();
    // The version selectors never reach the provider.
    expect(lastQuery()).not.toHaveProperty('schema_version');
    expect(lastQuery()).not.toHaveProperty('tool_version');

    const chosen = await run('drive_get_file_metadata', { file_id: seed.notes.id, fields: 'id,owners(emailAddress)' });
    expect(chosen).toEqual({ id: seed.notes.id, owners: [{ emailAddress: drive.me }] });
  });

  it('drive_get_file_metadata reaches shared-drive files only with supports_all_drives', async () => {
    const e = await failure(run('drive_get_file_metadata', { file_id: seed.shared.id }));
    expect(e.isProviderError).toBe(true);
    expect(e.status).toBe(404);
    expect((e.providerBody as any).error.errors[0].reason).toBe('notFound');
    const meta = await run('drive_get_file_metadata', { file_id: seed.shared.id, supports_all_drives: true });
    expect(meta.name).toBe('Team plan.txt');
    expect(lastQuery().supportsAllDrives).toBe('true');
  });

  it('drive_search_content searches file bodies, leaves out trash, and never sends orderBy', async () => {
    const found = await run('drive_search_content', { search_term: 'quarterly plan' });
    expect(names(found).sort()).toEqual(['Q3 report.pdf', 'notes.txt']);
    expect(lastQuery()).toEqual({ q: "fullText contains 'quarterly plan' and trashed = false", fields: LIST_FIELDS });
    expect(found.files[0]).toHaveProperty('size');
    expect(found.files[0]).toHaveProperty('createdTime');

    const pdfOnly = await run('drive_search_content', { search_term: 'quarterly', mime_type: 'application/pdf' });
    expect(names(pdfOnly)).toEqual(['Q3 report.pdf']);
    expect(lastQuery().q).toBe("fullText contains 'quarterly' and mimeType = 'application/pdf' and trashed = false");

    expect(names(await run('drive_search_content', { search_term: '"quarterly plan"' })).sort()).toEqual([
      'Q3 report.pdf',
      'notes.txt',
    ]);
    expect(names(await run('drive_search_content', { search_term: '"plan quarterly"' }))).toEqual([]);

    const shared = await run('drive_search_content', { search_term: 'quarterly plan', supports_all_drives: true });
    expect(names(shared).sort()).toEqual(['Q3 report.pdf', 'Team plan.txt', 'notes.txt']);
    expect(lastQuery()).toMatchObject({
      supportsAllDrives: 'true',
      includeItemsFromAllDrives: 'true',
      corpora: 'allDrives',
    });

    expect(
      drive.requests.filter(
        (r) => r.path === '/drive/v3/files' && 'orderBy' in r.query && /fullText/.test(r.query.q ?? ''),
      ),
    ).toEqual([]);
  });

  it('drive_search_content escapes quotes and backslashes so the query still parses', async () => {
    const quote = await run('drive_search_content', { search_term: "O'Brien" });
    expect(names(quote)).toEqual(["O'Brien notes.txt"]);
    expect(lastQuery().q).toBe("fullText contains 'O\\'Brien' and trashed = false");
    const backslash = await run('drive_search_content', { search_term: 'back\\slash' });
    expect(names(backslash)).toEqual(["O'Brien notes.txt"]);
    expect(lastQuery().q).toBe("fullText contains 'back\\\\slash' and trashed = false");
  });

  it('drive_search_content pages with page_size and page_token, and wraps a bare fields list', async () => {
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await run('drive_search_content', {
        search_term: 'plan',
        page_size: 1,
        fields: 'id,name',
        ...(token ? { page_token: token } : {}),
      });
      expect(page.files).toHaveLength(1);
      expect(Object.keys(page.files[0]).sort()).toEqual(['id', 'name']);
      expect(lastQuery().fields).toBe('nextPageToken,incompleteSearch,files(id,name)');
      seen.push(page.files[0].name);
      token = page.nextPageToken;
      pages++;
    } while (token);
    // Every non-trashed, non-shared-drive file mentioning "plan": the PDF, the notes and the Roadmap document.
    expect(pages).toBe(3);
    expect(seen.sort()).toEqual(['Q3 report.pdf', 'Roadmap', 'notes.txt']);
  });

  it('drive_search_files passes the query through and sorts with order_by', async () => {
    const byName = await run('drive_search_files', { query: "name contains 'Q3'" });
    expect(names(byName)).toEqual(['Q3 report.pdf']);
    expect(lastQuery()).toEqual({ q: "name contains 'Q3'", fields: LIST_FIELDS });

    const inFolder = await run('drive_search_files', {
      query: `'${seed.reports.id}' in parents`,
      order_by: 'name asc',
    });
    expect(names(inFolder)).toEqual(['Q3 report.pdf', 'Roadmap']);
    expect(lastQuery().orderBy).toBe('name');

    const desc = await run('drive_search_files', {
      query: `'${seed.reports.id}' in parents`,
      order_by: 'name desc',
      page_size: 5,
    });
    expect(names(desc)).toEqual(['Roadmap', 'Q3 report.pdf']);
    expect(lastQuery()).toMatchObject({ orderBy: 'name desc', pageSize: '5' });

    const folders = await run('drive_search_files', {
      query: "mimeType = 'application/vnd.google-apps.folder'",
      fields: 'nextPageToken,files(id,mimeType)',
    });
    expect(folders.files).toEqual([{ id: seed.reports.id, mimeType: 'application/vnd.google-apps.folder' }]);

    const docsOnly = await run('drive_search_files', {
      query: `mimeType = '${GOOGLE_DOC}' and not name contains 'zzz'`,
      order_by: 'folder,modifiedTime desc',
    });
    expect(names(docsOnly)).toEqual(['Roadmap']);
    expect(lastQuery().orderBy).toBe('folder,modifiedTime desc');
  });

  it('drive_search_files without a query lists trashed files too; shared drives only on request', async () => {
    const all = await run('drive_search_files', { page_size: 1000 });
    expect(names(all)).toContain('old report.txt');
    expect(names(all)).not.toContain('Team plan.txt');
    const withShared = await run('drive_search_files', {
      supports_all_drives: true,
      query: 'trashed = false',
      order_by: 'name',
    });
    expect(names(withShared)).toContain('Team plan.txt');
    expect(names(withShared)).not.toContain('old report.txt');
    const lower = names(withShared).map((n) => n.toLowerCase());
    expect(lower).toEqual([...lower].sort());
  });

  it("returns Drive's own refusal of a sorted fullText query as a provider error", async () => {
    const e = await failure(
      run('drive_search_files', { query: "fullText contains 'plan'", order_by: 'modifiedTime desc' }),
    );
    expect(e.isProviderError).toBe(true);
    expect(e.status).toBe(400);
    expect((e.providerBody as any).error.message).toMatch(/Sorting is not supported for queries with fullText terms/);
    const bad = await failure(run('drive_search_files', { query: "name contanes 'x'" }));
    expect(bad.status).toBe(400);
    expect((bad.providerBody as any).error.errors[0]).toMatchObject({ reason: 'invalid', location: 'q' });
  });

  it('covers every drive tool of the registry', () => {
    const driveTools = [...tools.values()]
      .filter((t) => t.connector === 'drive')
      .map((t) => t.name)
      .sort();
    expect(driveTools).toEqual(['drive_get_file_metadata', 'drive_search_content', 'drive_search_files']);
    const paths = new Set(drive.requests.map((r) => `${r.method} ${r.path.replace(/\/files\/[^/]+$/, '/files/:id')}`));
    expect(paths).toContain('GET /drive/v3/files/:id');
    expect(paths).toContain('GET /drive/v3/files');
    expect(drive.requests.some((r) => /^fullText contains/.test(r.query.q ?? ''))).toBe(true);
    expect(drive.requests.some((r) => r.query.q === "name contains 'Q3'")).toBe(true);
  });
});

describe('dry runs show the exact request and send nothing', () => {
  it('for every drive tool', async () => {
    const before = drive.requests.length;
    const dry = async (toolName: string, toolInput: Record<string, unknown>) => {
      const { data } = await h.client.executeTool({
        toolName: toolName as never,
        toolInput: toolInput as never,
        dryRun: true,
        ...who,
      });
      const reqs = (data as { requests: Array<{ method: string; url: string; headers: Record<string, string> }> })
        .requests;
      expect(reqs).toHaveLength(1);
      expect(reqs[0]!.headers.authorization).toBe('Bearer [REDACTED]');
      return `${reqs[0]!.method} ${reqs[0]!.url.slice(drive.url.length)}`;
    };
    expect(
      await dry('drive_get_file_metadata', { file_id: 'abc', supports_all_drives: false, schema_version: '1' }),
    ).toBe(
      'GET /drive/v3/files/abc?fields=id,name,mimeType,size,createdTime,modifiedTime,parents,owners,webViewLink&supportsAllDrives=false',
    );
    expect(
      await dry('drive_search_content', {
        search_term: "it's",
        mime_type: 'text/plain',
        page_size: 10,
        tool_version: '1',
      }),
    ).toBe(
      `GET /drive/v3/files?q=fullText%20contains%20'it%5C's'%20and%20mimeType%20%3D%20'text/plain'%20and%20trashed%20%3D%20false&fields=${LIST_FIELDS}&pageSize=10`,
    );
    expect(
      await dry('drive_search_files', {
        query: "'me' in owners",
        order_by: 'createdTime desc,name asc',
        page_token: 't1',
      }),
    ).toBe(
      `GET /drive/v3/files?q='me'%20in%20owners&fields=${LIST_FIELDS}&orderBy=createdTime%20desc,name&pageToken=t1`,
    );
    expect(drive.requests.length).toBe(before);
  });
});

describe('bad input is a 400 naming the field, before any upstream call', () => {
  it('refuses missing, empty, out-of-range and unknown values', async () => {
    const before = drive.requests.length;
    const fields = async (toolName: string, input: Record<string, unknown>) => {
      const e = await failure(run(toolName, input));
      expect(e.status).toBe(400);
      expect(e.code).toBe('invalid_input');
      return Object.fromEntries(e.details.map((d) => [d.field, d.message]));
    };
    expect(await fields('drive_get_file_metadata', {})).toEqual({ file_id: 'is required' });
    expect(await fields('drive_get_file_metadata', { file_id: '', supports_all_drives: 'yes' })).toEqual({
      file_id: 'must not be empty',
      supports_all_drives: 'must be a boolean',
    });
    expect(await fields('drive_search_content', { search_term: '', page_size: 0 })).toEqual({
      search_term: 'must not be empty',
      page_size: 'must be at least 1',
    });
    expect(await fields('drive_search_content', { search_term: 'x', page_size: 1001 })).toEqual({
      page_size: 'must be at most 1000',
    });
    expect(await fields('drive_search_content', { search_term: 'x', page_size: 2.5 })).toEqual({
      page_size: 'must be an integer',
    });
    const noSort = await fields('drive_search_content', { search_term: 'x', order_by: 'name' });
    expect(noSort.order_by).toMatch(/^is not a parameter of drive_search_content/);
    const sort = await fields('drive_search_files', { order_by: 'size desc' });
    expect(sort.order_by).toMatch(/^value "size desc" does not match/);
    expect(await fields('drive_search_files', { schema_version: '2', tool_version: '0' })).toEqual({
      schema_version: 'must be one of: 1',
      tool_version: 'must be one of: 1',
    });
    expect(drive.requests.length).toBe(before);
  });
});

describe('file transfer through the proxy', () => {
  it('uploads raw bytes with uploadType=media and downloads them with alt=media', async () => {
    const bytes = new Uint8Array(200_000).map((_, i) => (i * 7919) % 251);
    const sha = createHash('sha256').update(bytes).digest('hex');
    const up = await h.client.request({
      ...who,
      path: '/upload/drive/v3/files',
      method: 'POST',
      queryParams: { uploadType: 'media', name: 'report.bin' },
      formData: bytes,
      headers: { 'Content-Type': 'application/octet-stream' },
    });
    expect(up.status).toBe(200);
    const created = up.data as { id: string; kind: string; name: string; mimeType: string };
    expect(created.kind).toBe('drive#file');
    expect(created.mimeType).toBe('application/octet-stream');
    // `name` is forwarded unchanged; Drive's simple upload does not take it, so the file is "Untitled".
    expect(drive.lastUpload!.query).toEqual({ uploadType: 'media', name: 'report.bin' });
    expect(created.name).toBe('Untitled');
    expect(drive.files.get(created.id)!.sha256).toBe(sha);

    const down = await h.client.request({
      ...who,
      path: `/drive/v3/files/${created.id}`,
      queryParams: { alt: 'media' },
    });
    expect(down.status).toBe(200);
    expect(down.headers.get('content-type')).toBe('application/octet-stream');
    expect(createHash('sha256').update(down.content).digest('hex')).toBe(sha);

    const meta = await run('drive_get_file_metadata', { file_id: created.id });
    expect(meta.size).toBe(String(bytes.length));
  });

  it("passes Drive's refusals through: Google-native files are not downloadable, list fields must be wrapped", async () => {
    const native = await h.client.request({
      ...who,
      path: `/drive/v3/files/${seed.sheet.id}`,
      queryParams: { alt: 'media' },
    });
    expect(native.status).toBe(403);
    expect((native.data as any).error.errors[0]).toMatchObject({ reason: 'fileNotDownloadable', domain: 'global' });
    const bare = await h.client.request({ ...who, path: '/drive/v3/files', queryParams: { fields: 'id,name' } });
    expect(bare.status).toBe(400);
    expect((bare.data as any).error.message).toBe('Invalid field selection id');
    const text = await h.client.request({
      ...who,
      path: `/drive/v3/files/${seed.notes.id}`,
      queryParams: { alt: 'media' },
    });
    expect(text.text()).toBe('Meeting notes. The quarterly plan is ready for review.');
  });
});
