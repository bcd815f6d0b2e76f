/**
 * JavaScript built-in names as request fields (issue 12, point 6), over the whole route table: every endpoint that
 * declares a request body (core/api/endpoints.ts: the REST API, the MCP server and webhook routes, the token
 * endpoint's form and JSON, and Scalekit's /api/v1 REST) must refuse `constructor`, `toString`, `hasOwnProperty` and
 * `__proto__` as unknown fields: a 400 invalid_input naming the field, as it does for any unknown name. The table is
 * read from the endpoints themselves, so a route added later is covered without touching this file. The token
 * endpoint is the one exception by design: RFC 6749 section 3.2 says an authorization server MUST ignore request
 * parameters it does not know, so there the names are ignored, and must not stand in for the real ones.
 * test/reliability/hostile-requests.test.ts and test/e2e/route-table.test.ts check the same names inside nested
 * objects (tool_input, api_hosts, oauth, credentials) with bodies that are otherwise valid.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpoints, type Endpoint } from '../../core/api/endpoints.ts';
import { serviceToken, startHarness, TEST_CLIENT_ID, TEST_CLIENT_SECRET, type Harness } from '../helpers/harness.ts';
import { record } from './summary.ts';

const BUILTINS = ['constructor', 'toString', 'hasOwnProperty', '__proto__'] as const;

let h: Harness;
let token: string;
let tried = 0;
let failed = 0;

beforeAll(async () => {
  h = await startHarness({ env: { LOG_LEVEL: 'warn' } });
  token = await serviceToken(h.url);
});

afterAll(async () => {
  record({
    category: 'attacks tried',
    what: 'built-in names as top-level fields, on every route with a request body',
    tried,
    failed,
  });
  await h?.close();
});

const withBody = (Object.entries(endpoints) as Array<[string, Endpoint]>).filter(([, e]) => e.body);
/**
 * The OAuth protocol's own endpoints (`/oauth/...`: the service token, and the MCP authorization server's token,
 * revocation, registration and consent) answer in their protocol's terms: RFC 6749 ignores unknown parameters, RFC
 * 7591 names its own errors, the consent is a page. Checked apart, below; every other route with a body here.
 */
const oauthProtocol = withBody.filter(([, e]) => e.path.startsWith('/oauth/'));
const checked = withBody.filter(([, e]) => !e.path.startsWith('/oauth/'));

interface Refusal {
  status: number;
  code?: string;
  fields: string[];
  text: string;
}

async function send(e: Endpoint, body: string, contentType: string): Promise<Refusal> {
  const res = await fetch(`${h.url}${e.path.replace(/\{\w+\}/g, 'x')}`, {
    method: e.method,
    headers: { 'content-type': contentType, ...(e.auth === 'bearer' ? { authorization: `Bearer ${token}` } : {}) },
    body,
  });
  const text = await res.text();
  let json: { error?: { code?: string; details?: Array<{ field: string }> } } = {};
  try {
    json = JSON.parse(text) as typeof json;
  } catch {
    // Not JSON: the assertions below say what came instead.
  }
  return {
    status: res.status,
    code: json.error?.code,
    fields: json.error?.details?.map((d) => d.field) ?? [],
    text: text.slice(0, 400),
  };
}

describe('built-in names on every route with a request body', () => {
  it('the table covers the REST, MCP server, webhook, token and Scalekit routes', () => {
    const paths = withBody.map(([, e]) => e.path);
    for (const expected of [
      '/oauth/token',
      '/v1/tools/execute',
      '/v1/connections',
      '/v1/connected-accounts',
      '/v1/mcp-servers',
      '/v1/webhooks',
      '/api/v1/connected_accounts',
      '/api/v1/execute_tool',
    ])
      expect(paths).toContain(expected);
  });

  it.each(checked)('%s refuses each of them as an unknown field, naming it', async (_operation, e) => {
    for (const name of BUILTINS) {
      tried++;
      const r = await send(e, `{${JSON.stringify(name)}: "x"}`, 'application/json');
      try {
        expect(r.status, `${name}: ${r.text}`).toBe(400);
        expect(r.code, r.text).toBe('invalid_input');
        expect(r.fields, `${name}: ${r.text}`).toContain(name);
      } catch (err) {
        failed++;
        throw err;
      }
    }
  });
});

describe('built-in names on the OAuth protocol endpoints', () => {
  it.each(oauthProtocol.filter(([operation]) => operation !== 'issueToken'))(
    '%s answers them as a client error in its protocol’s terms, never a server error',
    async (_operation, e) => {
      for (const name of BUILTINS) {
        tried++;
        for (const [body, type] of [
          [`{${JSON.stringify(name)}: "x"}`, 'application/json'],
          [`${encodeURIComponent(name)}=x`, 'application/x-www-form-urlencoded'],
        ] as const) {
          const r = await send(e, body, type);
          try {
            expect(r.status, `${name}: ${r.text}`).toBeGreaterThanOrEqual(400);
            expect(r.status, `${name}: ${r.text}`).toBeLessThan(500);
          } catch (err) {
            failed++;
            throw err;
          }
        }
      }
    },
  );
});

describe('built-in names on the token endpoint (RFC 6749: unknown parameters are ignored)', () => {
  const tokenEndpoint = endpoints.issueToken;
  const credentials = {
    grant_type: 'client_credentials',
    client_id: TEST_CLIENT_ID,
    client_secret: TEST_CLIENT_SECRET,
  };

  it('ignores them beside valid credentials, as form fields and as JSON', async () => {
    for (const name of BUILTINS) {
      tried += 2;
      const form = new URLSearchParams(credentials);
      form.append(name, 'x');
      const asForm = await send(tokenEndpoint, form.toString(), 'application/x-www-form-urlencoded');
      const asJson = await send(
        tokenEndpoint,
        `{${JSON.stringify(name)}: "x", ${JSON.stringify(credentials).slice(1)}`,
        'application/json',
      );
      if (asForm.status !== 200) failed++;
      if (asJson.status !== 200) failed++;
      expect(asForm.status, `${name}: ${asForm.text}`).toBe(200);
      expect(asJson.status, `${name}: ${asJson.text}`).toBe(200);
    }
  });

  it('never reads the credentials from under them: an object under __proto__ or constructor is no sign-in', async () => {
    for (const name of ['__proto__', 'constructor', 'toString']) {
      tried++;
      // A computed key is an own property, even "__proto__": JSON.stringify writes it as a client could send it.
      const r = await send(tokenEndpoint, JSON.stringify({ [name]: credentials }), 'application/json');
      if (r.status !== 400) failed++;
      expect(r.status, `${name}: ${r.text}`).toBe(400);
      expect(r.text).toContain('invalid_request');
      expect(r.text).not.toContain('access_token');
    }
  });
});
