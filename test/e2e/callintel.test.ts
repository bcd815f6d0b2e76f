/**
 * The call-intelligence connector end to end: the real service, the client library, the fake Gong and the
 * fake OAuth server. Every tool runs through `executeTool` with an OAuth account (whose API host comes from
 * the token response, and whose scopes the fake checks per endpoint); the access-key kind runs its own
 * reads, writes and proxy calls. Assertions look at what the fake received and at its state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CALL_1,
  CALL_2,
  CALL_3,
  FakeGong,
  FLOW_REP_1,
  FLOW_REP_2,
  FLOW_SDR,
  FOLDER_REP,
  LIBRARY_CHILD,
  LIBRARY_ROOT,
  PROSPECT_IN_COOL_OFF,
  TASK_DONE,
  TASK_OPEN_FLOW,
  TASK_OPEN_MANUAL,
  TASK_SDR,
  TASK_UNDATED,
  U_FORMER,
  U_MANAGER,
  U_REP,
  U_SDR,
  WS_SALES,
  WS_SUPPORT,
} from '../fakes/gong.ts';
import { authorize, oauthConnection, startHarness, type Harness } from '../helpers/harness.ts';
import { AnswerLog } from '../helpers/answer-check.ts';
import { failure, requestsDuring, toolRunner } from '../helpers/tools.ts';
import { AuthorizationRequiredError, type DryRunData } from '../../packages/client/src/index.ts';
import { tools } from '../../generated/registry.ts';

const KEY = 'QWERTY1234567890';
const SECRET = 'gong-secret-9f8e7d6c5b4a3';
const oauthWho = { connectionName: 'callintel', identifier: 'rep-1' };
const keyWho = { connectionName: 'callintel-key', identifier: 'acme' };
const basicHeader = `Basic ${Buffer.from(`${KEY}:${SECRET}`).toString('base64')}`;

let h: Harness;
let gong: FakeGong;
const executed = new Set<string>();

// A call the test expects to fail counts as executed too.
// The upstream mapping is checked against the provider's own answer (response_format detailed); the concise
// answers are checked against the tool's declared output (test/helpers/answer-check.ts).
const answers = new AnswerLog('callintel', () => h);
const run = toolRunner<any>({
  harness: () => h,
  who: oauthWho,
  executed,
  countWhen: 'called',
  responseFormat: 'detailed',
  answers,
});

/** The requests the fake received while `fn` ran. */
const received = (fn: () => Promise<unknown>) => requestsDuring(() => gong.requests, fn);

beforeAll(async () => {
  gong = await new FakeGong({ accessKey: KEY, accessKeySecret: SECRET }).start();
  h = await startHarness({ oauth: { requirePkce: false, extraTokenFields: { api_base_url_for_customer: gong.url } } });
  gong.bearerScopes = (token) => h.oauth.validate(token)?.scope.split(' ');
  // OAuth: no API base override — the host comes from the token response, as for a real Gong customer.
  await oauthConnection(h, 'callintel', 'callintel', gong.url, {
    authMethod: 'client_secret_basic',
    extra: { api_base_url: undefined },
  });
  await authorize(h, 'callintel', 'rep-1');
  // Access key: the connection points at the fake (the account's own field must stay on *.gong.io).
  await h.client.createConnection({
    connection_name: 'callintel-key',
    connector: 'callintel',
    auth_kind: 'api_key',
    api_base_url: gong.url,
  });
  await h.client.upsertConnectedAccount({ ...keyWho, credentials: { access_key: KEY, access_key_secret: SECRET } });
});
afterAll(async () => {
  answers.write();
  await gong?.close();
  await h?.close();
});

describe('two ways to authenticate on one connector', () => {
  it('OAuth: Basic client auth and no PKCE at the token endpoint, the per-customer host from the token response', async () => {
    const exchange = h.oauth.tokenRequests.find((r) => r.grant_type === 'authorization_code')!;
    expect(exchange.code_verifier).toBeUndefined();
    expect(exchange.client_secret).toBeUndefined(); // sent with HTTP Basic, which the fake requires for this client
    const conn = await h.client.getConnection('callintel');
    expect(conn.auth_kind).toBe('oauth2');
    expect(conn.api_base_url).toBeNull();
    const account = await h.client.getOrCreateConnectedAccount(oauthWho);
    expect(account.status).toBe('ACTIVE');
    expect(account.fields.api_base_url).toBe(gong.url);

    const seen = await received(() => run('callintel_engage_workspaces_list', {}));
    expect(seen).toHaveLength(1);
    expect(seen[0]!.authorization).toMatch(/^Bearer at_/);
    expect(seen[0]!.path).toBe('/v2/workspaces');
  });

  it('OAuth: an expired access token is refreshed once and the rotated refresh token replaces the old one', async () => {
    const before = h.oauth.counts.refresh_token;
    const liveBefore = h.oauth.liveRefreshTokens();
    h.oauth.expireAccessTokens();
    const seen = await received(() => run('callintel_engage_workspaces_list', {}));
    expect(seen.map((r) => r.authorization === seen[0]!.authorization)).toEqual([true, false]);
    expect(h.oauth.counts.refresh_token).toBe(before + 1);
    const refresh = h.oauth.tokenRequests.at(-1)!;
    expect(refresh.grant_type).toBe('refresh_token');
    expect(liveBefore).toContain(refresh.refresh_token);
    expect(h.oauth.liveRefreshTokens()).not.toContain(refresh.refresh_token);
  });

  it('OAuth: a tool whose scope the account was not granted asks for it (incremental consent), sending Gong nothing', async () => {
    await oauthConnection(h, 'callintel-narrow', 'callintel', gong.url, {
      authMethod: 'client_secret_basic',
      extra: { api_base_url: undefined, scopes: ['api:users:read'] },
    });
    await authorize(h, 'callintel-narrow', 'narrow');
    const who = { connectionName: 'callintel-narrow', identifier: 'narrow' };
    expect((await run('callintel_users_list', {}, who)).users.length).toBeGreaterThan(0);
    const before = gong.requests.length;
    const e = await failure(run('callintel_engage_workspaces_list', {}, who));
    expect(e.status).toBe(403);
    expect(e).toBeInstanceOf(AuthorizationRequiredError);
    expect((e as AuthorizationRequiredError).reason).toBe('missing_scopes');
    expect((e as AuthorizationRequiredError).missingScopes).toEqual(['api:workspaces:read']);
    expect(gong.requests.length).toBe(before);
  });

  it('access key: Basic key:secret, the default base URL stored, the secret never shown', async () => {
    const account = await h.client.getOrCreateConnectedAccount(keyWho);
    expect(account.fields).toEqual({ access_key: KEY, api_base_url: 'https://api.gong.io' });
    expect(JSON.stringify(account)).not.toContain(SECRET);

    const seen = await received(async () => {
      expect((await run('callintel_engage_workspaces_list', {}, keyWho)).workspaces).toHaveLength(2);
      const transcripts = await run('callintel_calls_transcript_get', { call_ids: [CALL_1] }, keyWho);
      expect(transcripts.callTranscripts[0].callId).toBe(CALL_1);
      const assigned = await run(
        'callintel_engage_prospects_assign',
        { flow_id: FLOW_SDR, crm_prospect_ids: ['00Q-KEY-1'], flow_instance_owner_email: 'sdr@acme.com' },
        keyWho,
      );
      expect(assigned.prospectsAssigned).toHaveLength(1);
      const tasks = await run('callintel_engage_tasks_list', { assignee_email: 'sdr@acme.com' }, keyWho);
      expect(tasks.tasks.map((t: { id: string }) => t.id)).toEqual([TASK_SDR]);
    });
    expect(seen.length).toBeGreaterThanOrEqual(5);
    expect(seen.every((r) => r.authorization === basicHeader)).toBe(true);
  });

  it('access key: the account base URL must be an https URL on *.gong.io; a stored one is where tools go', async () => {
    for (const api_base_url of ['https://gong.io.evil.example', 'http://us-1.api.gong.io', 'https://127.0.0.1']) {
      const e = await failure(
        h.client.upsertConnectedAccount({
          ...keyWho,
          identifier: 'bad',
          credentials: { access_key: KEY, access_key_secret: SECRET, api_base_url },
        }),
      );
      expect(e.status).toBe(400);
      expect(e.details.map((d) => d.field)).toEqual(['credentials.api_base_url']);
    }
    // Without a connection override, the account's host is used (a dry run, so nothing leaves the machine).
    await h.client.createConnection({
      connection_name: 'callintel-direct',
      connector: 'callintel',
      auth_kind: 'api_key',
    });
    const direct = { connectionName: 'callintel-direct', identifier: 'us' };
    await h.client.upsertConnectedAccount({
      ...direct,
      credentials: { access_key: KEY, access_key_secret: SECRET, api_base_url: 'https://us-12345.api.gong.io' },
    });
    const { data } = await h.client.executeTool({
      toolName: 'callintel_users_list',
      toolInput: {},
      ...direct,
      dryRun: true,
    });
    expect((data as DryRunData).requests[0]).toMatchObject({
      method: 'GET',
      url: 'https://us-12345.api.gong.io/v2/users',
      headers: { authorization: 'Basic [REDACTED]' },
    });
  });

  it("OAuth import: takes the token response's own api_base_url_for_customer, and refuses an account without a host", async () => {
    const tokens = { access_token: 'imported-access', refresh_token: 'imported-refresh', expires_in: 3600 };
    const before = gong.requests.length;
    const missing = await failure(
      h.client.upsertConnectedAccount({ ...oauthWho, identifier: 'imported', credentials: tokens }),
    );
    expect(missing.status).toBe(400);
    expect(missing.details).toEqual([
      { field: 'credentials.api_base_url', message: expect.stringContaining('api_base_url_for_customer') },
    ]);
    const listed = await h.client.listConnectedAccounts({ connectionName: 'callintel', identifier: 'imported' });
    expect(JSON.stringify(listed)).not.toContain('"identifier":"imported"');

    const saved = await h.client.upsertConnectedAccount({
      ...oauthWho,
      identifier: 'imported',
      credentials: { ...tokens, api_base_url_for_customer: 'https://us-12345.api.gong.io/' },
    });
    expect(saved.status).toBe('ACTIVE');
    const { data } = await h.client.executeTool({
      toolName: 'callintel_users_list',
      toolInput: {},
      ...oauthWho,
      identifier: 'imported',
      dryRun: true,
    });
    expect((data as DryRunData).requests[0]).toMatchObject({
      url: 'https://us-12345.api.gong.io/v2/users',
      headers: { authorization: 'Bearer [REDACTED]' },
    });
    // Both names at once must agree; a host off Gong is refused, whichever name carries it.
    const both = await failure(
      h.client.upsertConnectedAccount({
        ...oauthWho,
        identifier: 'imported',
        credentials: {
          ...tokens,
          api_base_url: 'https://us-1.api.gong.io',
          api_base_url_for_customer: 'https://us-2.api.gong.io',
        },
      }),
    );
    expect(both.details).toEqual([{ field: 'credentials.api_base_url_for_customer', message: expect.any(String) }]);
    const evil = await failure(
      h.client.upsertConnectedAccount({
        ...oauthWho,
        identifier: 'imported',
        credentials: { ...tokens, api_base_url_for_customer: 'https://gong.io.evil.example' },
      }),
    );
    expect(evil.status).toBe(400);
    expect(gong.requests.length).toBe(before);
  });

  it('access key: a wrong secret is Gong 401, returned as the provider error', async () => {
    await h.client.upsertConnectedAccount({
      ...keyWho,
      identifier: 'wrong',
      credentials: { access_key: KEY, access_key_secret: 'nope-nope' },
    });
    const e = await failure(run('callintel_users_list', {}, { ...keyWho, identifier: 'wrong' }));
    expect(e.status).toBe(401);
    expect(e.isProviderError).toBe(true);
    expect(e.providerBody).toMatchObject({ errors: ['Invalid access key or secret'] });

    // Checked on save when asked: GET /v2/workspaces with the new credentials, nothing stored on refusal.
    const before = gong.requests.length;
    const refused = await failure(
      h.client.upsertConnectedAccount({
        ...keyWho,
        identifier: 'checked',
        credentials: { access_key: KEY, access_key_secret: 'nope-nope' },
        verify: true,
      }),
    );
    expect(refused.status).toBe(400);
    expect(refused.code).toBe('invalid_credentials');
    expect(gong.requests.slice(before).map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v2/workspaces']);
    const saved = await h.client.upsertConnectedAccount({
      ...keyWho,
      identifier: 'checked',
      credentials: { access_key: KEY, access_key_secret: SECRET },
      verify: true,
    });
    expect(saved.status).toBe('ACTIVE');
  });

  it('proxy: /v2 paths go to the customer host with either kind of credentials', async () => {
    for (const who of [oauthWho, keyWho]) {
      const res = await h.client.request({ ...who, path: '/v2/users', queryParams: { includeAvatars: true } });
      expect(res.status).toBe(200);
      expect((res.data as { records: { totalRecords: number } }).records.totalRecords).toBe(5);
      expect(gong.requests.at(-1)!.authorization).toMatch(who === keyWho ? basicHeader : /^Bearer at_/);
    }
    const notFound = await h.client.request({ ...keyWho, path: '/v2/flows/prospects/bulk-assignments/1' });
    expect(notFound.status).toBe(404);
    expect(notFound.data).toMatchObject({ errors: ['Bulk assignment 1 not found'] });
  });
});

describe('calls', () => {
  it('lists calls with GET and query parameters, following records.cursor', async () => {
    const seen = await received(async () => {
      const first = await run('callintel_calls_list', {
        from_date_time: '2026-01-01T00:00:00Z',
        to_date_time: '2026-12-31T00:00:00Z',
      });
      expect(first.calls.map((c: { id: string }) => c.id)).toEqual([CALL_1, CALL_2]);
      expect(first.records).toMatchObject({ totalRecords: 3, currentPageSize: 2, currentPageNumber: 0 });
      const next = await run('callintel_calls_list', {
        from_date_time: '2026-01-01T00:00:00Z',
        to_date_time: '2026-12-31T00:00:00Z',
        cursor: first.records.cursor,
      });
      expect(next.calls.map((c: { id: string }) => c.id)).toEqual([CALL_3]);
      expect(next.records.cursor).toBeUndefined();
      const sales = await run('callintel_calls_list', { workspace_id: WS_SUPPORT });
      expect(sales.calls.map((c: { id: string }) => c.id)).toEqual([CALL_3]);
    });
    expect(seen.map((r) => [r.method, r.path])).toEqual([
      ['GET', '/v2/calls'],
      ['GET', '/v2/calls'],
      ['GET', '/v2/calls'],
    ]);
    expect(seen[0]!.query).toEqual({ fromDateTime: '2026-01-01T00:00:00Z', toDateTime: '2026-12-31T00:00:00Z' });
    expect(seen[1]!.query.cursor).toBeDefined();
    expect(seen[2]!.query).toEqual({ workspaceId: WS_SUPPORT });
  });

  it('lists given calls through calls/extensive, an unknown id being an empty page', async () => {
    const seen = await received(async () => {
      const listed = await run('callintel_calls_list', { call_ids: `${CALL_3}, ${CALL_1}` });
      expect(listed.calls.map((c: { metaData: { id: string } }) => c.metaData.id).sort()).toEqual([CALL_1, CALL_3]);
      const none = await run('callintel_calls_list', { call_ids: '1' });
      expect(none).toEqual({ calls: [], records: { totalRecords: 0, currentPageSize: 0, currentPageNumber: 0 } });
    });
    expect(seen[0]).toMatchObject({
      method: 'POST',
      path: '/v2/calls/extensive',
      body: { filter: { callIds: [CALL_3, CALL_1] } },
    });
    expect(seen[1]!.body).toEqual({ filter: { callIds: ['1'] } });
  });

  it('gets extensive call details with the content selector the purpose names', async () => {
    const seen = await received(async () => {
      const got = await run('callintel_calls_get', {
        call_ids: [CALL_1],
        workspace_id: WS_SALES,
        from_date_time: '2026-01-01T00:00:00Z',
      });
      const call = got.calls[0];
      expect(call.metaData.id).toBe(CALL_1);
      expect(call.parties.map((p: { emailAddress: string }) => p.emailAddress)).toEqual([
        'rep@acme.com',
        'buyer@customer.com',
      ]);
      expect(
        call.interaction.personInteractionStats[0].personInteractionStats.map((s: { name: string }) => s.name),
      ).toContain('Talk Ratio');
      expect(call.content.topics[0].name).toBe('Pricing');
      expect(call.context[0].objects[0]).toMatchObject({ objectType: 'Account', objectId: '001A000001' });
      expect(await run('callintel_calls_get', { call_ids: ['42'] })).toMatchObject({ calls: [] });
    });
    expect(seen[0]!.body).toEqual({
      filter: { callIds: [CALL_1], fromDateTime: '2026-01-01T00:00:00Z', workspaceId: WS_SALES },
      contentSelector: {
        context: 'Extended',
        exposedFields: {
          parties: true,
          content: { topics: true, trackers: true },
          interaction: { speakers: true, personInteractionStats: true, questions: true },
        },
      },
    });
  });

  it('reads transcripts: speaker-attributed sentences with offsets; 404 "No calls found" is empty', async () => {
    const seen = await received(async () => {
      const t = await run('callintel_calls_transcript_get', {
        call_ids: [CALL_1, CALL_2],
        from_date_time: '2026-01-15T00:00:00Z',
        to_date_time: '2026-02-01T00:00:00Z',
      });
      expect(t.callTranscripts.map((x: { callId: string }) => x.callId)).toEqual([CALL_2]);
      expect(t.callTranscripts[0].transcript[0]).toMatchObject({
        speakerId: expect.any(String),
        sentences: [{ start: 1000, end: 4200 }],
      });
      expect(await run('callintel_calls_transcript_get', { call_ids: [CALL_3], workspace_id: WS_SALES })).toEqual({
        callTranscripts: [],
        records: { totalRecords: 0, currentPageSize: 0, currentPageNumber: 0 },
      });
    });
    expect(seen.map((r) => r.body)).toEqual([
      {
        filter: { callIds: [CALL_1, CALL_2], fromDateTime: '2026-01-15T00:00:00Z', toDateTime: '2026-02-01T00:00:00Z' },
      },
      { filter: { callIds: [CALL_3], workspaceId: WS_SALES } },
    ]);
  });

  it('registers a call with Gong primary user and language code, then uploads the recording through the proxy', async () => {
    const created = await run('callintel_calls_create', {
      actual_start: '2026-06-15T14:00:00Z',
      client_unique_id: 'pbx-7781',
      title: 'Discovery',
      direction: 'Outbound',
      duration: 1740,
      language: 'en-US',
      workspace_id: WS_SALES,
      parties: [
        { emailAddress: 'buyer@x.com', name: 'Buyer', speakerId: '99' },
        { userId: U_REP, emailAddress: 'rep@acme.com', name: 'Rep' },
      ],
    });
    const call = gong.calls.get(created.callId)!;
    expect(call).toMatchObject({
      clientUniqueId: 'pbx-7781',
      primaryUserId: U_REP,
      languageCode: 'en-US',
      direction: 'Outbound',
      duration: 1740,
      workspaceId: WS_SALES,
    });
    expect((gong.requests.at(-1)!.body as { parties: unknown[] }).parties).toEqual([
      { emailAddress: 'buyer@x.com', name: 'Buyer' },
      { userId: U_REP, emailAddress: 'rep@acme.com', name: 'Rep' },
    ]);
    expect(created.mediaUploadPath).toBe(`/v2/calls/${created.callId}/media`);
    expect(created.mediaUploadUrl).toBe(`${gong.url}/v2/calls/${created.callId}/media`);

    const boundary = 'acsboundary42';
    const audio = Buffer.alloc(3000, 7);
    const multipart = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="mediaFile"; filename="call.mp3"\r\nContent-Type: audio/mpeg\r\n\r\n`,
      ),
      audio,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const up = await h.client.request({
      ...oauthWho,
      path: created.mediaUploadPath,
      method: 'PUT',
      formData: new Uint8Array(multipart),
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    expect(up.status).toBe(200);
    expect(gong.uploads.get(created.callId)).toEqual({ contentType: 'audio/mpeg', bytes: 3000, fileName: 'call.mp3' });
  });

  it('refuses a duplicate client id, derives a stable one when none is given, and keeps Gong 400s', async () => {
    const dup = await failure(
      run('callintel_calls_create', {
        actual_start: '2026-06-15T14:00:00Z',
        client_unique_id: 'pbx-7781',
        direction: 'Inbound',
        parties: [{ userId: U_REP }],
      }),
    );
    expect(dup.status).toBe(409);
    expect(dup.isProviderError).toBe(true);

    const input = {
      actual_start: '2026-06-16T09:00:00Z',
      direction: 'Inbound',
      title: 'Walk-in',
      parties: [{ userId: U_SDR }],
    };
    const first = await run('callintel_calls_create', input);
    expect(gong.calls.get(first.callId)!.clientUniqueId).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(gong.calls.get(first.callId)!.primaryUserId).toBe(U_SDR);
    const again = await failure(run('callintel_calls_create', input));
    expect(again.status).toBe(409);

    // The spec leaves direction and parties optional; Gong requires them (and a primary user).
    const bare = await failure(run('callintel_calls_create', { actual_start: '2026-06-17T09:00:00Z' }));
    expect(bare.status).toBe(400);
    expect(bare.providerBody).toMatchObject({
      errors: ['direction is required', 'parties is required', 'primaryUser is required'],
    });
  });
});

describe('users, workspaces, settings and library', () => {
  it('lists users page by page, avatars only on request', async () => {
    const seen = await received(async () => {
      const p1 = await run('callintel_users_list', {});
      const p2 = await run('callintel_users_list', { cursor: p1.records.cursor });
      expect([...p1.users, ...p2.users].map((u: { id: string }) => u.id)).toEqual([U_MANAGER, U_SDR, U_REP, U_FORMER]);
      expect(p2.records.cursor).toBeUndefined();
      const withAvatars = await run('callintel_users_list', { include_avatars: true });
      expect(withAvatars.records.totalRecords).toBe(5);
      const engage = await run('callintel_engage_users_list', { include_avatars: false });
      expect(engage.users.every((u: { active: boolean }) => typeof u.active === 'boolean')).toBe(true);
    });
    expect(seen.map((r) => r.query)).toEqual([
      {},
      { cursor: expect.any(String) },
      { includeAvatars: 'true' },
      { includeAvatars: 'false' },
    ]);
  });

  it('gets detailed users by id and creation date, with the cursor in the body', async () => {
    const seen = await received(async () => {
      const got = await run('callintel_users_get', {
        user_ids: [U_REP, U_SDR],
        created_from_date_time: '2025-05-01T00:00:00Z',
      });
      expect(got.users.map((u: { id: string }) => u.id)).toEqual([U_SDR]);
      expect(got.users[0]).toMatchObject({ managerId: U_MANAGER, settings: { webConferencesRecorded: true } });
      const all = await run('callintel_users_get', {});
      const rest = await run('callintel_users_get', { cursor: all.records.cursor });
      expect(all.records.totalRecords).toBe(4);
      expect(rest.users).toHaveLength(2);
    });
    // Gong requires `filter`: with no filter field the tool sends an empty one (issue 13 point 15).
    expect(seen.map((r) => r.body)).toEqual([
      { filter: { userIds: [U_REP, U_SDR], createdFromDateTime: '2025-05-01T00:00:00Z' } },
      { filter: {} },
      { filter: {}, cursor: expect.any(String) },
    ]);
    // The fake holds Gong to it: a body without `filter` is a 400.
    const noFilter = await h.client.request({
      ...oauthWho,
      method: 'POST',
      path: '/v2/users/extensive',
      formData: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(noFilter.status).toBe(400);
    expect(noFilter.data).toMatchObject({ errors: ['filter is required'] });
  });

  it('reads workspaces, call outcomes, scorecards, trackers, library folders and folder content', async () => {
    const seen = await received(async () => {
      expect((await run('callintel_engage_workspaces_list', {})).workspaces.map((w: { id: string }) => w.id)).toEqual([
        WS_SALES,
        WS_SUPPORT,
      ]);
      expect((await run('callintel_call_outcomes_list', {})).callOutcomes[0]).toMatchObject({
        id: '9001',
        name: 'Meeting booked',
      });
      expect((await run('callintel_scorecards_list', {})).scorecards[0].questions).toHaveLength(1);
      expect((await run('callintel_trackers_list', {})).keywordTrackers).toHaveLength(2);
      const folders = await run('callintel_library_folders_list', { workspace_id: WS_SALES });
      expect(
        folders.folders.map((f: { id: string; parentFolderId: string | null }) => [f.id, f.parentFolderId]),
      ).toEqual([
        [LIBRARY_ROOT, null],
        [LIBRARY_CHILD, LIBRARY_ROOT],
      ]);
      const content = await run('callintel_library_folder_content_get', { folder_id: LIBRARY_CHILD });
      expect(content.calls.map((c: { id: string }) => c.id)).toEqual([CALL_1, CALL_2]);
      expect(content.calls[1].snippet).toEqual({ fromSec: 120, toSec: 185 });
    });
    expect(seen.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /v2/workspaces',
      'GET /v2/call-outcomes',
      'GET /v2/settings/scorecards',
      'GET /v2/settings/trackers',
      'GET /v2/library/folders',
      'GET /v2/library/folder-content',
    ]);
    expect(seen[4]!.query).toEqual({ workspaceId: WS_SALES });
    expect(seen[5]!.query).toEqual({ folderId: LIBRARY_CHILD });
    const missing = await failure(run('callintel_library_folder_content_get', { folder_id: '1' }));
    expect(missing.status).toBe(404);
  });
});

describe('stats and coaching', () => {
  it('interaction stats: times cut to dates for the stats endpoint; per call through calls/extensive', async () => {
    const seen = await received(async () => {
      const stats = await run('callintel_stats_interaction', {
        from_date_time: '2026-01-01T10:00:00Z',
        to_date_time: '2026-02-01T08:30:00Z',
      });
      expect(stats.peopleInteractionStats[0].personInteractionStats.map((s: { name: string }) => s.name)).toEqual([
        'Talk Ratio',
        'Longest Monologue',
        'Patience',
        'Question Rate',
        'Interactivity',
      ]);
      const more = await run('callintel_stats_interaction', {
        from_date_time: '2026-01-01T10:00:00Z',
        to_date_time: '2026-02-01T08:30:00Z',
        cursor: stats.records.cursor,
      });
      expect(more.records.currentPageNumber).toBe(1);
      const perCall = await run('callintel_stats_interaction', {
        from_date_time: '2026-01-01T00:00:00Z',
        to_date_time: '2026-02-01T00:00:00Z',
        call_ids: [CALL_1],
      });
      expect(perCall.calls[0].interaction.personInteractionStats[0]).toMatchObject({ userId: U_REP });
    });
    expect(seen.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /v2/stats/interaction',
      'POST /v2/stats/interaction',
      'POST /v2/calls/extensive',
    ]);
    expect(seen[0]!.body).toEqual({ filter: { fromDate: '2026-01-01', toDate: '2026-02-01' } });
    expect(seen[1]!.body).toEqual({
      filter: { fromDate: '2026-01-01', toDate: '2026-02-01' },
      cursor: expect.any(String),
    });
    expect(seen[2]!.body).toMatchObject({
      filter: { callIds: [CALL_1] },
      contentSelector: { exposedFields: { interaction: { personInteractionStats: true } } },
    });
  });

  it('user activity stats by user over whole days; Gong refuses a period ending after today', async () => {
    const seen = await received(async () => {
      const stats = await run('callintel_stats_user_actions', {
        from_date_time: '2026-01-01T00:00:00Z',
        to_date_time: '2026-02-01T00:00:00Z',
        user_ids: [U_REP],
      });
      const hosted = [...gong.calls.values()].filter((c) => c.primaryUserId === U_REP).length;
      expect(stats.usersAggregateActivityStats).toEqual([
        expect.objectContaining({
          userId: U_REP,
          userAggregateActivity: expect.objectContaining({ callsAsHost: hosted }),
        }),
      ]);
    });
    expect(seen[0]!.body).toEqual({ filter: { fromDate: '2026-01-01', toDate: '2026-02-01', userIds: [U_REP] } });
    const future = await failure(
      run('callintel_stats_user_actions', {
        from_date_time: '2026-01-01T00:00:00Z',
        to_date_time: '2099-01-01T00:00:00Z',
      }),
    );
    expect(future.status).toBe(400);
    expect(future.providerBody).toMatchObject({ errors: ['filter.toDate must not be after today'] });
  });

  it('coaching with the parameters Gong requires, under their hyphenated names', async () => {
    const seen = await received(async () => {
      const c = await run('callintel_coaching_get', {
        workspace_id: WS_SALES,
        manager_id: U_MANAGER,
        from_date_time: '2026-06-01T00:00:00Z',
        to_date_time: '2026-07-01T00:00:00Z',
      });
      expect(c.coachingData[0].manager.id).toBe(U_MANAGER);
      expect(c.coachingData[0].directReportsMetrics.map((m: { report: { id: string } }) => m.report.id)).toEqual([
        U_SDR,
        U_REP,
      ]);
    });
    expect(seen[0]!.query).toEqual({
      'workspace-id': WS_SALES,
      'manager-id': U_MANAGER,
      from: '2026-06-01T00:00:00Z',
      to: '2026-07-01T00:00:00Z',
    });
  });

  it("coaching with the spec's input alone (cursor only): workspaces, managers and the last 30 days resolved", async () => {
    const before = Date.now();
    const seen = await received(async () => {
      const c = await run('callintel_coaching_get', { cursor: 'first' });
      // Every workspace (the fake company has two) for the one manager of active users.
      expect(c.resolved).toMatchObject({ workspaceIds: [WS_SALES, WS_SUPPORT], managerIds: [U_MANAGER] });
      expect(
        c.coachingData.map((d: { workspaceId: string; manager: { id: string } }) => [d.workspaceId, d.manager.id]),
      ).toEqual([
        [WS_SALES, U_MANAGER],
        [WS_SUPPORT, U_MANAGER],
      ]);
      expect(Date.parse(c.resolved.to)).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
      expect(Date.parse(c.resolved.to) - Date.parse(c.resolved.from)).toBe(30 * 86_400_000);
      expect(JSON.stringify(c)).not.toContain('cursor');
    });
    expect(seen.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /v2/workspaces',
      'GET /v2/users',
      'GET /v2/users',
      'GET /v2/coaching',
      'GET /v2/coaching',
    ]);
    expect(seen.slice(3).map((r) => r.query['workspace-id'])).toEqual([WS_SALES, WS_SUPPORT]);
    for (const r of seen.slice(3)) expect(r.query).toMatchObject({ 'manager-id': U_MANAGER });

    // Given a workspace and a period, only the managers are looked up.
    const one = await received(() =>
      run('callintel_coaching_get', { workspace_id: WS_SUPPORT, from_date_time: '2026-06-01T00:00:00Z' }),
    );
    expect(one.map((r) => r.path)).toEqual(['/v2/users', '/v2/users', '/v2/coaching']);
    expect(one.at(-1)!.query).toMatchObject({ 'workspace-id': WS_SUPPORT, from: '2026-06-01T00:00:00Z' });

    // The dry run shows every request, with the values that come from earlier answers as placeholders.
    const plan = await h.client.executeTool({
      toolName: 'callintel_coaching_get',
      toolInput: { to_date_time: '2026-07-01T00:00:00Z' },
      ...oauthWho,
      dryRun: true,
    });
    expect((plan.data as DryRunData).requests.map((r) => `${r.method} ${r.url.replace(gong.url, '')}`)).toEqual([
      'GET /v2/workspaces',
      'GET /v2/users',
      'GET /v2/coaching?workspace-id={from: previous response}&manager-id={from: previous response}&from=2026-06-01T00:00:00Z&to=2026-07-01T00:00:00Z',
    ]);
  });
});

describe('engagement flows and prospects', () => {
  it('lists flows and flow folders of a user, with the case-sensitive owner parameters', async () => {
    const seen = await received(async () => {
      const p1 = await run('callintel_engage_flows_list', { flow_owner_email: 'rep@acme.com' });
      const p2 = await run('callintel_engage_flows_list', {
        flow_owner_email: 'rep@acme.com',
        cursor: p1.records.cursor,
      });
      expect([...p1.flows, ...p2.flows].map((f: { id: string }) => f.id)).toEqual([
        FLOW_REP_1,
        FLOW_REP_2,
        '1695493301223590794',
      ]);
      const inSupport = await run('callintel_engage_flows_list', {
        flow_owner_email: 'rep@acme.com',
        workspace_id: WS_SUPPORT,
      });
      expect(inSupport.flows).toHaveLength(1);
      const folders = await run('callintel_engage_flow_folders_list', {
        flow_owner_email: 'rep@acme.com',
        workspace_id: WS_SALES,
      });
      expect(folders.flows.map((f: { id: string }) => f.id)).toEqual([FOLDER_REP]);
    });
    expect(seen[0]!.query).toEqual({ flowOwnerEmail: 'rep@acme.com' });
    expect(seen[2]!.query).toEqual({ flowOwnerEmail: 'rep@acme.com', workspaceId: WS_SUPPORT });
    expect(seen[3]).toMatchObject({
      path: '/v2/flows/folders',
      query: { flowFolderOwnerEmail: 'rep@acme.com', workspaceId: WS_SALES },
    });
  });

  it('assigns prospects (crmProspectsIds), the cool-off override assigns the ones plain assignment refuses', async () => {
    const plain = await run('callintel_engage_prospects_assign', {
      flow_id: FLOW_REP_1,
      crm_prospect_ids: ['a5V1Q00A120DP4CVAW', PROSPECT_IN_COOL_OFF],
      flow_instance_owner_email: 'rep@acme.com',
    });
    expect(gong.requests.at(-1)!.body).toEqual({
      flowId: FLOW_REP_1,
      crmProspectsIds: ['a5V1Q00A120DP4CVAW', PROSPECT_IN_COOL_OFF],
      flowInstanceOwnerEmail: 'rep@acme.com',
    });
    expect(plain.prospectsAssigned.map((p: { crmProspectId: string }) => p.crmProspectId)).toEqual([
      'a5V1Q00A120DP4CVAW',
    ]);
    expect(plain.prospectsNotAssigned).toEqual([
      expect.objectContaining({ crmProspectId: PROSPECT_IN_COOL_OFF, errorCode: 'CoolOffPeriod' }),
    ]);

    const override = await run('callintel_engage_prospects_assign_cool_off_override', {
      flow_id: FLOW_REP_1,
      crm_prospect_ids: [PROSPECT_IN_COOL_OFF],
      flow_instance_owner_email: 'rep@acme.com',
    });
    expect(gong.requests.at(-1)!.path).toBe('/v2/flows/prospects/assign/cool-off-override');
    expect(override.prospectsAssigned).toHaveLength(1);
    expect(gong.instancesOf(PROSPECT_IN_COOL_OFF).map((i) => i.flowInstanceStatus)).toEqual(['Running']);

    // Optional in the spec, required by Gong.
    const noOwner = await failure(
      run('callintel_engage_prospects_assign_cool_off_override', { flow_id: FLOW_REP_1, crm_prospect_ids: ['x'] }),
    );
    expect(noOwner.status).toBe(400);
    expect(noOwner.providerBody).toMatchObject({ errors: ['flowInstanceOwnerEmail is required'] });
  });

  it('lists the flows of prospects, unassigns by CRM id (one request per id) and by flow instance', async () => {
    const listed = await run('callintel_engage_prospects_flows_list', {
      crm_prospect_ids: ['a5V1Q00A120DP4CVAW', PROSPECT_IN_COOL_OFF],
    });
    expect(gong.requests.at(-1)!.body).toEqual({ crmProspectsIds: ['a5V1Q00A120DP4CVAW', PROSPECT_IN_COOL_OFF] });
    expect(listed.prospectsAssigned.map((p: { flowName: string }) => p.flowName)).toEqual([
      'Outbound Q3',
      'Outbound Q3',
    ]);

    const seen = await received(async () => {
      const out = await run('callintel_engage_prospects_unassign', {
        flow_id: FLOW_REP_1,
        crm_prospect_ids: ['a5V1Q00A120DP4CVAW', PROSPECT_IN_COOL_OFF],
      });
      expect(out).toHaveLength(2);
      expect(out[0].unassignedFlowInstanceIds).toHaveLength(1);
    });
    expect(seen.map((r) => r.body)).toEqual([
      { crmProspectId: 'a5V1Q00A120DP4CVAW', flowId: FLOW_REP_1 },
      { crmProspectId: PROSPECT_IN_COOL_OFF, flowId: FLOW_REP_1 },
    ]);
    expect(gong.instancesOf('a5V1Q00A120DP4CVAW').every((i) => i.flowInstanceStatus === 'Unassigned')).toBe(true);

    const assigned = await run('callintel_engage_prospects_assign', {
      flow_id: FLOW_REP_2,
      crm_prospect_ids: ['003-INST-1', '003-INST-2'],
      flow_instance_owner_email: 'rep@acme.com',
    });
    const ids = assigned.prospectsAssigned.map((p: { flowInstanceId: string }) => p.flowInstanceId);
    const removed = await run('callintel_engage_prospects_unassign_by_instance', { flow_instance_ids: ids });
    expect(gong.requests.at(-1)!.body).toEqual({ flowInstanceIds: ids });
    expect(removed.unassignedFlowInstanceIds).toEqual(ids);
    expect(ids.map((id: string) => gong.instances.get(id)!.flowInstanceStatus)).toEqual(['Unassigned', 'Unassigned']);
  });

  it('bulk assignment is asynchronous: an id with PENDING status, then the result once Gong has run it', async () => {
    const submitted = await run('callintel_engage_prospects_bulk_assign', {
      flow_id: FLOW_REP_2,
      crm_prospect_ids: ['003-BULK-1', '003-BULK-2'],
      flow_instance_owner_email: 'rep@acme.com',
    });
    expect(gong.requests.at(-1)!.body).toEqual({
      flowId: FLOW_REP_2,
      flowInstanceOwnerEmail: 'rep@acme.com',
      prospects: [{ crmId: '003-BULK-1' }, { crmId: '003-BULK-2' }],
    });
    expect(submitted).toMatchObject({ id: expect.stringMatching(/^\d+$/), status: 'PENDING', totalCount: 2 });
    expect(gong.instancesOf('003-BULK-1')).toEqual([]);

    expect(await run('callintel_engage_prospects_bulk_assign_status', { assignment_id: submitted.id })).toMatchObject({
      status: 'PENDING',
      totalCount: 2,
    });
    gong.processBulkAssignments();
    const done = await run('callintel_engage_prospects_bulk_assign_status', { assignment_id: submitted.id });
    expect(done).toMatchObject({ status: 'COMPLETED', successCount: 2, failureCount: 0 });
    expect(gong.instancesOf('003-BULK-1')).toHaveLength(1);

    // Gong takes at most 50 per bulk request and needs the owner email; the spec states neither.
    const many = Array.from({ length: 51 }, (_, i) => `003-MANY-${i}`);
    const tooMany = await failure(
      run('callintel_engage_prospects_bulk_assign', {
        flow_id: FLOW_REP_2,
        crm_prospect_ids: many,
        flow_instance_owner_email: 'rep@acme.com',
      }),
    );
    expect(tooMany.providerBody).toMatchObject({
      errors: ['prospects may hold at most 50 prospects per bulk assignment'],
    });
  });
});

describe('engagement tasks', () => {
  it('lists the tasks of a user found by email, paging through the users list first', async () => {
    const seen = await received(async () => {
      const all = await run('callintel_engage_tasks_list', { assignee_email: 'Rep@Acme.com' });
      expect(all.assignee).toEqual({ userId: U_REP, emailAddress: 'rep@acme.com' });
      expect(all.tasks.map((t: { id: string }) => t.id).sort()).toEqual(
        [TASK_OPEN_FLOW, TASK_OPEN_MANUAL, TASK_DONE, TASK_UNDATED].sort(),
      );
    });
    expect(seen.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v2/users', 'GET /v2/users', 'POST /v2/tasks']);
    expect(seen[1]!.query).toEqual({ cursor: expect.any(String) });
    expect(seen[2]!.body).toEqual({
      filter: { userId: U_REP, types: ['FLOW', 'MANUAL'], taskAction: ['CALL'], status: ['OPEN', 'DONE', 'DISMISSED'] },
    });
  });

  it('applies the due-date window and the workspace, matches aliases, and answers an unknown email with 404', async () => {
    const window = await run('callintel_engage_tasks_list', {
      assignee_email: 'r.ep@acme.com',
      from_date: '2026-07-01',
      to_date: '2026-07-06',
      workspace_id: WS_SALES,
    });
    expect(window.tasks.map((t: { id: string }) => t.id)).toEqual([TASK_OPEN_FLOW]);
    expect(gong.requests.at(-1)!.body).toMatchObject({ filter: { userId: U_REP, workspaceId: WS_SALES } });

    const none = await run('callintel_engage_tasks_list', { assignee_email: 'manager@acme.com' });
    expect(none).toMatchObject({ tasks: [], assignee: { userId: U_MANAGER } });

    const before = gong.requests.length;
    const e = await failure(run('callintel_engage_tasks_list', { assignee_email: 'nobody@acme.com' }));
    expect(e.status).toBe(404);
    expect(e.code).toBe('assignee_not_found');
    expect(e.details).toEqual([{ field: 'assignee_email', message: 'matches no Gong user (email address or alias)' }]);
    expect(gong.requests.slice(before).map((r) => r.path)).toEqual(['/v2/users', '/v2/users']);
  });

  it('completes (DONE) and skips (DISMISSED) tasks with the owner id Gong requires', async () => {
    const done = await run('callintel_engage_task_complete', { task_id: TASK_OPEN_FLOW, user_id: U_REP });
    expect(gong.requests.at(-1)).toMatchObject({
      method: 'PATCH',
      path: `/v2/tasks/${TASK_OPEN_FLOW}`,
      body: { userId: U_REP, status: 'DONE' },
    });
    expect(done.tasks[0].status).toBe('DONE');
    expect(gong.tasks.get(TASK_OPEN_FLOW)!.status).toBe('DONE');

    await run('callintel_engage_task_skip', { task_id: TASK_OPEN_MANUAL, user_id: U_REP });
    expect(gong.requests.at(-1)!.body).toEqual({ userId: U_REP, status: 'DISMISSED' });
    expect(gong.tasks.get(TASK_OPEN_MANUAL)!.status).toBe('DISMISSED');

    const again = await failure(run('callintel_engage_task_complete', { task_id: TASK_OPEN_FLOW, user_id: U_REP }));
    expect(again.status).toBe(400);
    expect(again.providerBody).toMatchObject({
      errors: [`Task ${TASK_OPEN_FLOW} is DONE; only an OPEN task can change status`],
    });
    const notOwner = await failure(run('callintel_engage_task_skip', { task_id: TASK_UNDATED, user_id: U_SDR }));
    expect(notOwner.status).toBe(403);
    expect(gong.tasks.get(TASK_UNDATED)!.status).toBe('OPEN');
  });

  it('finds the owner when user_id is not given (the spec takes only task_id)', async () => {
    const before = gong.requests.length;
    await run('callintel_engage_task_skip', { task_id: TASK_UNDATED });
    const sent = gong.requests.slice(before);
    expect(sent[0]).toMatchObject({ method: 'GET', path: '/v2/users' });
    expect(sent.filter((r) => r.method === 'POST' && r.path === '/v2/tasks').length).toBeGreaterThan(0);
    expect(sent.at(-1)).toMatchObject({
      method: 'PATCH',
      path: `/v2/tasks/${TASK_UNDATED}`,
      body: { userId: U_REP, status: 'DISMISSED' },
    });
    expect(gong.tasks.get(TASK_UNDATED)!.status).toBe('DISMISSED');
    // A task that is open under nobody is a 404 naming task_id, and nothing is changed.
    const e = await failure(run('callintel_engage_task_complete', { task_id: TASK_UNDATED }));
    expect(e.status).toBe(404);
    expect(e.details).toEqual([{ field: 'task_id', message: 'is not an open task of any user' }]);
    expect(gong.requests.at(-1)!.method).not.toBe('PATCH');
    gong.tasks.get(TASK_UNDATED)!.status = 'OPEN';
  });

  it('accepts notes and reasons Gong cannot store: changes the status, and warns that the note was not stored', async () => {
    const exec = (toolName: string, toolInput: Record<string, unknown>, dryRun = false) => {
      executed.add(toolName);
      return h.client.executeTool({ toolName: toolName as never, toolInput: toolInput as never, ...oauthWho, dryRun });
    };
    const input = { task_id: TASK_UNDATED, user_id: U_REP, completion_notes: 'Left a voicemail' };
    const plan = await exec('callintel_engage_task_complete', input, true);
    expect(plan.warnings).toEqual([{ field: 'completion_notes', message: expect.stringContaining('no notes field') }]);
    const done = await exec('callintel_engage_task_complete', input);
    // What Gong received has no trace of the note (it has no field for one), and the status changed.
    expect(gong.requests.at(-1)).toMatchObject({ method: 'PATCH', path: `/v2/tasks/${TASK_UNDATED}` });
    expect(gong.requests.at(-1)!.body).toEqual({ userId: U_REP, status: 'DONE' });
    expect((done.data as { tasks: Array<{ status: string }> }).tasks[0]!.status).toBe('DONE');
    expect(done.warnings).toEqual([
      {
        field: 'completion_notes',
        message: "was not stored: Gong's task API has no notes field; the task was completed without it",
      },
    ]);
    gong.tasks.get(TASK_UNDATED)!.status = 'OPEN';

    const skipped = await exec('callintel_engage_task_skip', {
      task_id: TASK_UNDATED,
      user_id: U_REP,
      skip_reason: 'Duplicate',
    });
    expect(gong.requests.at(-1)!.body).toEqual({ userId: U_REP, status: 'DISMISSED' });
    expect(skipped.warnings).toEqual([{ field: 'skip_reason', message: expect.stringContaining('no reason field') }]);
    expect(gong.tasks.get(TASK_UNDATED)!.status).toBe('DISMISSED');
    gong.tasks.get(TASK_UNDATED)!.status = 'OPEN';

    // Without a note there is no warning at all.
    const plain = await exec('callintel_engage_task_skip', { task_id: TASK_UNDATED, user_id: U_REP }, true);
    expect(plain.warnings).toBeUndefined();
  });

  it('accepts a cursor on the unpaged task list: the first page holds every task, and no next cursor comes back', async () => {
    const first = await run('callintel_engage_tasks_list', { assignee_email: 'rep@acme.com' });
    const paged = await run('callintel_engage_tasks_list', { assignee_email: 'rep@acme.com', cursor: 'c' });
    expect(paged.tasks).toEqual(first.tasks);
    expect(JSON.stringify(paged)).not.toContain('cursor');
    expect(gong.requests.at(-1)!.body).not.toHaveProperty('cursor');
  });
});

describe('engagement events', () => {
  it('adds a digital interaction with the CRM contexts and a stable event id', async () => {
    const input = {
      event_name: 'Visited Pricing Page',
      event_timestamp: '2026-06-15T14:00:00Z',
      url: 'https://acme.com/pricing',
      prospect_email: 'buyer@x.com',
      crm_contact_id: '003A000001',
      crm_account_id: '001A000001',
    };
    await run('callintel_engage_digital_interactions_create', input);
    await run('callintel_engage_digital_interactions_create', input);
    const sent = gong.requests
      .filter((r) => r.path === '/v2/digital-interaction')
      .map((r) => r.body as { eventId: string });
    expect(sent[0]!.eventId).toBe(sent[1]!.eventId);
    expect(gong.digitalInteractions.filter((d) => d.eventId === sent[0]!.eventId)).toEqual([
      {
        eventId: sent[0]!.eventId,
        timestamp: '2026-06-15T14:00:00Z',
        eventType: 'Visited Pricing Page',
        content: { contentTitle: 'Visited Pricing Page', contentUrl: 'https://acme.com/pricing' },
        person: {
          email: 'buyer@x.com',
          personBusinessContext: { objectType: 'CONTACT', objectId: '003A000001' },
          company: { companyBusinessContexts: [{ objectType: 'ACCOUNT', objectId: '001A000001' }] },
        },
      },
    ]);
    await run('callintel_engage_digital_interactions_create', {
      event_name: 'Webinar attended',
      event_timestamp: '2026-06-16T10:00:00Z',
    });
    expect(gong.requests.at(-1)!.body).toEqual({
      eventId: expect.any(String),
      timestamp: '2026-06-16T10:00:00Z',
      eventType: 'Webinar attended',
      content: { contentTitle: 'Webinar attended' },
    });
  });

  it('reports email activity as a digital interaction on the prospect timeline', async () => {
    await run('callintel_engage_email_activity_report', {
      email_id: 'msg-4711',
      event_timestamp: '2026-06-15T14:05:00Z',
      event_type: 'EMAIL_LINK_CLICKED',
      prospect_email: 'buyer@x.com',
      link_url: 'https://acme.com/pricing',
    });
    expect(gong.digitalInteractions.at(-1)).toEqual({
      eventId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      timestamp: '2026-06-15T14:05:00Z',
      eventType: 'EMAIL_LINK_CLICKED',
      content: { contentTitle: 'Email msg-4711', contentUrl: 'https://acme.com/pricing' },
      person: { email: 'buyer@x.com' },
    });
  });

  it('flow content override: 501 with the reason, nothing sent, and a dry run shows no request', async () => {
    const before = gong.requests.length;
    const e = await failure(
      run('callintel_engage_flow_content_override', {
        flow_instance_id: '1234361284629356',
        field_values: { 'recipient.first_name': 'Mike' },
      }),
    );
    expect(e.status).toBe(501);
    expect(e.code).toBe('not_supported_by_provider');
    expect(e.isProviderError).toBe(false);
    expect(e.message).toContain('can only be set when prospects are assigned');
    expect(e.details).toEqual([{ field: 'flow_instance_id', message: expect.any(String) }]);
    expect(gong.requests.length).toBe(before);
  });
});

describe('bad input is a 400 naming the field, before anything is sent', () => {
  const ids = (n: number) => Array.from({ length: n }, (_, i) => `00Q${String(i).padStart(12, '0')}`);
  const cases: Array<[string, Record<string, unknown>, string, string | RegExp]> = [
    [
      'callintel_engage_prospects_assign',
      { flow_id: FLOW_REP_1, crm_prospect_ids: ids(201), flow_instance_owner_email: 'rep@acme.com' },
      'crm_prospect_ids',
      'must have at most 200 items',
    ],
    [
      'callintel_engage_prospects_assign_cool_off_override',
      { flow_id: FLOW_REP_1, crm_prospect_ids: ids(201) },
      'crm_prospect_ids',
      'must have at most 200 items',
    ],
    [
      'callintel_engage_prospects_flows_list',
      { crm_prospect_ids: ids(201) },
      'crm_prospect_ids',
      'must have at most 200 items',
    ],
    [
      'callintel_engage_prospects_assign',
      { flow_id: FLOW_REP_1, crm_prospect_ids: ['x'] },
      'flow_instance_owner_email',
      'is required',
    ],
    ['callintel_engage_task_skip', { task_id: 1234361284629354, user_id: U_REP }, 'task_id', 'must be a string'],
    ['callintel_coaching_get', { manager_id: 'Mia' }, 'manager_id', /must match the pattern/],
    ['callintel_engage_tasks_list', { assignee_email: 'rep' }, 'assignee_email', 'must be an email address'],
    ['callintel_calls_list', { call_ids: `${CALL_1},abc` }, 'call_ids', /value "abc" does not match/],
    ['callintel_calls_get', { call_ids: [] }, 'call_ids', 'must have at least 1 item(s)'],
    ['callintel_calls_get', { call_ids: [7782342274025937] }, 'call_ids[0]', 'must be a string'],
    [
      'callintel_calls_create',
      { actual_start: '2026-06-15T14:00:00Z', direction: 'Sideways' },
      'direction',
      'must be one of: Inbound, Outbound',
    ],
    ['callintel_calls_create', { title: 'No start' }, 'actual_start', 'is required'],
    [
      'callintel_calls_create',
      { actual_start: '2026-06-15T14:00:00Z', parties: [{ userId: U_REP, role: 'host' }] },
      'parties[0].role',
      'is not an allowed field here',
    ],
    [
      'callintel_stats_interaction',
      { from_date_time: 'last monday', to_date_time: '2026-02-01T00:00:00Z' },
      'from_date_time',
      'must be an ISO 8601 date-time such as 2026-01-31T09:30:00Z',
    ],
    ['callintel_stats_user_actions', { from_date_time: '2026-01-01T00:00:00Z' }, 'to_date_time', 'is required'],
    ['callintel_engage_flows_list', {}, 'flow_owner_email', 'is required'],
    ['callintel_engage_flow_content_override', { flow_instance_id: '1' }, 'field_values', 'is required'],
    [
      'callintel_engage_email_activity_report',
      { email_id: 'm', event_timestamp: '2026-06-15T14:05:00Z', prospect_email: 'buyer@x.com' },
      'event_type',
      'is required',
    ],
  ];

  it.each(
    cases.map(([tool, input, field, message], i) => [`#${i} ${tool} → ${field}`, tool, input, field, message] as const),
  )('%s', async (_title, tool, input, field, message) => {
    const before = gong.requests.length;
    const e = await failure(run(tool, input));
    expect(e.status).toBe(400);
    expect(e.code).toBe('invalid_input');
    const detail = e.details.find((d) => d.field === field);
    expect(detail, JSON.stringify(e.details)).toBeDefined();
    if (typeof message === 'string') expect(detail!.message).toBe(message);
    else expect(detail!.message).toMatch(message);
    expect(gong.requests.length).toBe(before);
  });

  it('200 prospects are accepted', async () => {
    const out = await run('callintel_engage_prospects_flows_list', { crm_prospect_ids: ids(200) });
    expect(out.prospectsAssigned).toEqual([]);
  });
});

describe('rate limits and retries', () => {
  it('retries a POST read after 429 with Retry-After, but not without it', async () => {
    gong.rateLimit = { count: 1, retryAfter: 0 };
    const seen = await received(() => run('callintel_calls_transcript_get', { call_ids: [CALL_1] }));
    expect(seen.map((r) => r.path)).toEqual(['/v2/calls/transcript', '/v2/calls/transcript']);

    gong.rateLimit = { count: 1 };
    const before = gong.requests.length;
    const e = await failure(
      run('callintel_engage_prospects_bulk_assign', {
        flow_id: FLOW_REP_2,
        crm_prospect_ids: ['003-RL-1'],
        flow_instance_owner_email: 'rep@acme.com',
      }),
    );
    expect(e.status).toBe(429);
    expect(e.isProviderError).toBe(true);
    expect(e.providerBody).toMatchObject({
      requestId: expect.any(String),
      errors: [expect.stringContaining('rate limit')],
    });
    expect(gong.requests.length - before).toBe(1);
    expect(gong.bulkAssignments.size).toBe(1);
  });
});

describe('dry run', () => {
  it('shows every tool the exact requests of its first example, on the account host, credentials redacted', async () => {
    const callintelTools = [...tools.values()].filter((t) => t.connector === 'callintel');
    for (const t of callintelTools) {
      const example = t.examples[0]!;
      const before = gong.requests.length;
      const { data } = await h.client.executeTool({
        toolName: t.name as never,
        toolInput: example.input as never,
        ...oauthWho,
        dryRun: true,
      });
      const { requests } = data as DryRunData;
      expect(gong.requests.length, t.name).toBe(before);
      expect(
        requests.map((r) => ({ method: r.method, url: r.url, body: r.body })),
        t.name,
      ).toEqual(
        example.requests.map((r) => ({
          method: r.method,
          url: r.url.replace('https://us-12345.api.gong.io', gong.url),
          body: r.body,
        })),
      );
      for (const r of requests) expect(r.headers.authorization, t.name).toBe('Bearer [REDACTED]');
      executed.add(`${t.name}:dry`);
    }
    const { data } = await h.client.executeTool({
      toolName: 'callintel_engage_tasks_list',
      toolInput: { assignee_email: 'rep@acme.com' },
      ...keyWho,
      dryRun: true,
    });
    expect((data as DryRunData).requests.map((r) => r.headers.authorization)).toEqual([
      'Basic [REDACTED]',
      'Basic [REDACTED]',
    ]);
    expect(JSON.stringify(data)).not.toContain(SECRET);
  });
});

describe('coverage', () => {
  it('executed and dry-ran every callintel tool', () => {
    const names = [...tools.values()].filter((t) => t.connector === 'callintel').map((t) => t.name);
    expect(names).toHaveLength(31);
    for (const n of names) {
      expect(executed, n).toContain(n);
      expect(executed, `${n} dry run`).toContain(`${n}:dry`);
    }
  });
});
