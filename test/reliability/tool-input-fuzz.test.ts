/**
 * Property-based fuzzing of every tool's input (group "hostile input"): 1,000 generated inputs per tool,
 * valid and invalid, derived from the tool's JSON Schema, run through `ToolExecutor.execute` in dry-run mode
 * against a real store and real connected accounts; then a smaller sample through `POST /v1/tools/execute`.
 *
 * The oracle is independent of the code under test: the tool's schema compiled at test time by ajv (the
 * generated validators are precompiled), plus the spec's rules for which parameters a rule may name.
 * - an input the schema accepts is planned (requests that stay on the connector's hosts, survive URL
 *   normalisation unchanged, carry valid header values and no secret), or refused by a rule as a 400
 *   `invalid_input` naming a parameter the spec's rules are about;
 * - an input the schema refuses is a 400 `invalid_input` whose details name the field that was broken;
 * - nothing else: no 5xx, no other exception, no prototype pollution.
 *
 * FUZZ_RUNS (default 1,000; 10,000 with RELIABILITY_SOAK=1) and FUZZ_HTTP_RUNS (16) set the counts per tool;
 * FUZZ_SEED replays a run (the summary prints the seed of each run).
 */
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Ajv } from 'ajv';
import { connectors, tools } from '../../generated/registry.ts';
import type { ToolSpec } from '../../core/spec-model.ts';
import { loadSpecFile, specFiles } from '../../generator/load.ts';
import { ServiceError } from '../../core/errors.ts';
import { FROM_PREVIOUS } from '../../core/tool-types.ts';
import { resolveBaseUrl } from '../../runtime/connectors/catalog.ts';
import { startHarness, TEST_CLIENT_ID, TEST_CLIENT_SECRET, type Harness } from '../helpers/harness.ts';
import { fieldValue } from '../helpers/tools.ts';
import { hintsOf, serviceRuleViolations, toolCase, type SpecHints, type ToolCase } from './schema-arbitraries.ts';
import { record } from './summary.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? (process.env.RELIABILITY_SOAK === '1' ? 10_000 : 1_000));
const HTTP_RUNS = Number(process.env.FUZZ_HTTP_RUNS ?? 16);
/** One seed for the run, printed in the summary: FUZZ_SEED=<it> replays the run exactly. */
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const SECRET = 'fuzz-secret-value-never-shown';
const IDENTIFIER = 'fuzz';

let h: Harness;
const specTools = new Map<string, ToolSpec>();
const hostsOf = new Map<string, Set<string>>();
const oracle = new Map<string, (data: unknown) => boolean>();
const ajv = new Ajv({ allErrors: true, strict: false });
const tally = {
  tried: 0,
  failed: 0,
  valid: 0,
  planned: 0,
  ruleRefusals: 0,
  invalid: 0,
  http: 0,
  httpFailed: 0,
  fewestPlanned: Infinity,
  fewestTool: '',
};

beforeAll(async () => {
  h = await startHarness({ env: { LOG_LEVEL: 'warn' } });
  for (const file of specFiles(join(process.cwd(), 'specs'))) {
    for (const t of loadSpecFile(file).spec.tools) specTools.set(t.name, t);
  }
  const services = h.running.services;
  for (const c of connectors.values()) {
    const auth = c.auth[0]!;
    await h.client.createConnection({
      connection_name: c.name,
      connector: c.name,
      ...(auth.kind === 'oauth2' ? { client_id: 'fuzz-client', client_secret: SECRET } : {}),
    });
    if ('fields' in auth) {
      await h.client.upsertConnectedAccount({
        connectionName: c.name,
        identifier: IDENTIFIER,
        credentials: Object.fromEntries(auth.fields.map((f) => [f.name, fieldValue(f, c.exampleFields, SECRET)])),
      });
    } else {
      const a = await h.client.getOrCreateConnectedAccount({ connectionName: c.name, identifier: IDENTIFIER });
      const stored = (await services.store.getAccount(a.id))!;
      await services.store.updateAccount(
        a.id,
        {
          fields: { ...c.exampleFields },
          secretsSealed: services.accounts.sealSecrets(a.id, { access_token: SECRET }),
        },
        Date.now(),
        stored.version,
      );
    }
    // The hosts a tool of this connector may address: its API (for this account) and the hosts its examples use.
    const connection = (await services.store.getConnectionByName(c.name))!;
    const account = (await services.store.findAccount(connection.id, IDENTIFIER))!;
    const hosts = new Set<string>();
    for (const name of [undefined, ...Object.keys(c.api.hosts ?? {})])
      hosts.add(new URL(resolveBaseUrl(c, connection, account.fields, name)).host);
    for (const t of c.toolNames)
      for (const ex of tools.get(t)!.examples)
        for (const r of ex.requests) {
          // A chained request's URL may start with a placeholder (`{from: previous response}`): no host to learn.
          if (URL.canParse(r.url)) hosts.add(new URL(r.url).host);
        }
    hostsOf.set(c.name, hosts);
  }
  for (const t of tools.values()) oracle.set(t.name, ajv.compile(structuredClone(t.inputSchema)));
});

afterAll(async () => {
  record({
    category: 'inputs fuzzed',
    what: `tool inputs through ToolExecutor.execute (dry run), ${tools.size} tools`,
    tried: tally.tried,
    failed: tally.failed,
    detail: `${tally.valid} valid (${tally.planned} planned, ${tally.ruleRefusals} refused by a cross-field rule), ${tally.invalid} invalid; fewest planned for one tool: ${tally.fewestPlanned} (${tally.fewestTool}); FUZZ_SEED=${SEED} replays this run`,
  });
  record({
    category: 'inputs fuzzed',
    what: 'tool inputs through POST /v1/tools/execute (dry run)',
    tried: tally.http,
    failed: tally.httpFailed,
  });
  await h?.close();
});

/** A cheap assertion for the hot path (vitest's expect costs more than the call under test); messages are built on failure only. */
function check(condition: boolean, message: () => string): asserts condition {
  if (!condition) throw new Error(message());
}

const PROTO_KEYS = Object.getOwnPropertyNames(Object.prototype).sort().join(',');
function assertNoPollution() {
  check(
    Object.getOwnPropertyNames(Object.prototype).sort().join(',') === PROTO_KEYS,
    () => `Object.prototype was changed: ${Object.getOwnPropertyNames(Object.prototype).join(',')}`,
  );
  check(({} as Record<string, unknown>).polluted === undefined, () => 'Object.prototype.polluted is set');
}

/** True when the detail names the broken field, the field inside it, or (for a broken nesting) its parent. */
function names(detail: string, field: string): boolean {
  return (
    detail === field ||
    detail.startsWith(`${field}.`) ||
    detail.startsWith(`${field}[`) ||
    field.startsWith(`${detail}.`) ||
    field.startsWith(`${detail}[`)
  );
}

interface Planned {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: unknown;
}

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);

function validHeader(k: string, v: string): boolean {
  try {
    http.validateHeaderName(k);
    http.validateHeaderValue(k, v);
    return true;
  } catch {
    return false;
  }
}

function checkPlanned(toolName: string, requests: Planned[]) {
  const tool = tools.get(toolName)!;
  check(Array.isArray(requests), () => 'data.requests is a list');
  // A tool the provider has no operation for plans nothing, as its examples say; every other tool plans something.
  if (tool.examples.some((e) => e.requests.length > 0))
    check(requests.length > 0, () => 'a valid input plans at least one request');
  for (const planned of requests) {
    // A value that comes from an earlier answer is shown as a placeholder; check the rest of the URL around it.
    const r = { ...planned, url: planned.url.split(FROM_PREVIOUS).join('from-previous-response') };
    check(METHODS.has(r.method), () => `method ${r.method}`);
    const u = new URL(r.url);
    check(u.protocol === 'https:' || u.protocol === 'http:', () => `${r.url} is http(s)`);
    // A host that an earlier answer names (an Actor's own MCP host) is known only when the tool runs.
    const hostFromAnswer = /^[a-z]+:\/\/[^/]*\{from: previous response\}/.test(planned.url);
    check(
      hostFromAnswer || hostsOf.get(tool.connector)!.has(u.host),
      () => `${r.url} stays on the connector's hosts (${[...hostsOf.get(tool.connector)!].join(', ')})`,
    );
    // What is sent is what is shown: a path that URL parsing rewrites ("..", ".") would reach another endpoint.
    const rawPath = r.url.slice(u.origin.length).split(/[?#]/)[0]!;
    check(
      u.pathname === rawPath || (hostFromAnswer && rawPath === ''),
      () => `${r.url} is rewritten by URL normalisation to ${u.pathname}`,
    );
    check(u.username + u.password === '', () => `${r.url} carries no userinfo`);
    for (const [k, v] of Object.entries(r.headers))
      check(validHeader(k, v), () => `header ${k}: ${JSON.stringify(v)} is not a valid header`);
  }
  check(!JSON.stringify(requests).includes(SECRET), () => 'a secret is shown in the plan');
}

type Outcome =
  | { ok: true; data: { requests: Planned[] } }
  | { ok: false; status: number; code: string; details: Array<{ field: string; message: string }>; message: string };

function checkRefusal(out: Extract<Outcome, { ok: false }>) {
  check(
    out.status === 400 && out.code === 'invalid_input',
    () => `expected 400 invalid_input, got ${out.status} ${out.code}: ${out.message}`,
  );
  check(out.details.length > 0, () => 'details name at least one field');
  for (const d of out.details) {
    check(typeof d.field === 'string' && d.field.length > 0, () => `detail without a field: ${JSON.stringify(d)}`);
    check(
      typeof d.message === 'string' && d.message.length > 0,
      () => `detail without a message: ${JSON.stringify(d)}`,
    );
  }
}

function checkOutcome(
  toolName: string,
  c: ToolCase,
  schemaValid: boolean,
  hints: SpecHints,
  out: Outcome,
): 'planned' | 'refused' {
  const broken = serviceRuleViolations(c.input, hints);
  if (schemaValid && !broken.length) {
    tally.valid++;
    if (out.ok) {
      tally.planned++;
      checkPlanned(toolName, out.data.requests);
      return 'planned';
    }
    tally.ruleRefusals++;
    checkRefusal(out);
    // A transform may turn a harmless value into a path step ("..:x" → ".."): refused, naming the path parameter.
    for (const d of out.details) {
      check(
        hints.ruleFields.has(d.field) || hints.pathParams.has(d.field),
        () =>
          `rule refusal names ${d.field} (${d.message}); the spec's rules are about ${[...hints.ruleFields].join(', ') || 'nothing'}`,
      );
    }
    return 'refused';
  }
  if (schemaValid) c = { ...c, field: broken[0], mutation: `service rule (${broken.join(', ')})` };
  tally.invalid++;
  check(!out.ok, () => `${c.mutation} of ${c.field}: the input must be refused`);
  checkRefusal(out);
  const named = schemaValid ? broken : c.field ? [c.field] : [];
  // A path segment is only checked when the request is built, after the rules: a rule may refuse first.
  const refusedByRule = schemaValid && out.details.every((d) => hints.ruleFields.has(d.field));
  if (named.length && !refusedByRule) {
    check(
      out.details.some((d) => named.some((f) => names(d.field, f))),
      () => `${c.mutation} of "${named.join(', ')}" is named; details: ${JSON.stringify(out.details).slice(0, 400)}`,
    );
  }
  return 'refused';
}

async function executeInProcess(toolName: string, input: unknown): Promise<Outcome> {
  try {
    const { data } = await h.running.services.executor.execute({
      toolName,
      input,
      dryRun: true,
      account: { connectionName: tools.get(toolName)!.connector, identifier: IDENTIFIER },
    });
    return { ok: true, data: data as { requests: Planned[] } };
  } catch (e) {
    // Anything but a service error below 500 is a crash the fuzzer found.
    if (!(e instanceof ServiceError) || e.status >= 500) throw e;
    return {
      ok: false,
      status: e.status,
      code: e.code,
      details: (e.details as Array<{ field: string; message: string }>) ?? [],
      message: e.message,
    };
  }
}

let token: string | undefined;
async function executeOverHttp(toolName: string, input: unknown): Promise<Outcome> {
  token ??= (
    (await (
      await fetch(`${h.url}/oauth/token`, {
        method: 'POST',
        body: new URLSearchParams({ client_id: TEST_CLIENT_ID, client_secret: TEST_CLIENT_SECRET }),
      })
    ).json()) as { access_token: string }
  ).access_token;
  const res = await fetch(`${h.url}/v1/tools/execute`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      tool_name: toolName,
      tool_input: input,
      connection_name: tools.get(toolName)!.connector,
      identifier: IDENTIFIER,
      dry_run: true,
    }),
  });
  const body = (await res.json()) as {
    data?: { requests: Planned[] };
    error?: { code: string; message: string; details?: Array<{ field: string; message: string }> };
  };
  expect(res.status, JSON.stringify(body).slice(0, 300)).toBeLessThan(500);
  if (res.status === 200) return { ok: true, data: body.data! };
  return {
    ok: false,
    status: res.status,
    code: body.error!.code,
    details: body.error!.details ?? [],
    message: body.error!.message,
  };
}

/** `tool_input` must be an object at the HTTP layer too; there it is checked before the tool is. */
function httpCase(c: ToolCase): boolean {
  return c.field !== 'tool_input';
}

/** Inputs that broke the service once (found by this fuzzer), replayed first on every run. */
const REGRESSIONS: Record<string, ToolCase[]> = {
  // A path segment "." or ".." (URL parsing resolves it: /contacts/.. is /crm/v3/objects/, another endpoint).
  crm_contact_get: [{ kind: 'valid', input: { contact_id: '..' } }],
  mail_get_attachment: [{ kind: 'valid', input: { message_id: '.', attachment_id: 'att-1' } }],
  mail_todo_tasks_get: [{ kind: 'valid', input: { list_id: '..', task_id: '..' } }],
  scraper_fetch_actor_details: [{ kind: 'valid', input: { actor: '.' } }],
  scraper_call_actor: [{ kind: 'valid', input: { actor: '..:tool', input: {} } }],
  // A lone surrogate: encodeURIComponent threw URIError, a 500.
  docs_list_documents: [{ kind: 'valid', input: { query: '\ud800' } }],
  prodata_get_profile_posts: [{ kind: 'valid', input: { profile_id: 'x\udfff' } }],
  // Header values Node refuses to send (the call failed as a 502 upstream error).
  prodata_bulk_scrape_profiles: [
    {
      kind: 'valid',
      input: { scraper_token: 'tok\r\nX-Injected: 1', profile_urls: ['https://www.linkedin.com/in/x'] },
    },
  ],
  prodata_get_company: [{ kind: 'valid', input: { account_id: '1\u0100' } }],
  // A docs URL whose path parses to the site root: "<base>.md" named the host crawlee.dev.md.
  scraper_fetch_platform_docs: [
    { kind: 'valid', input: { url: 'https://crawlee.dev/\\' } },
    { kind: 'valid', input: { url: 'https://docs.apify.com/..' } },
  ],
};

/** Parameters a hook turns into a request path (beyond the `{param}` segments of the YAML paths). */
const HOOK_PATH_PARAMS: Record<string, string[]> = { scraper_fetch_platform_docs: ['url'] };

const toolsByConnector = [...connectors.values()].map((c) => [c.name, c.toolNames] as const);

describe.each(toolsByConnector)('%s', (_connector, toolNames) => {
  it.each(toolNames.map((t) => [t]))(
    `%s: ${RUNS} generated inputs in process, then a sample over HTTP`,
    async (toolName) => {
      const tool = tools.get(toolName)!;
      const hints = hintsOf(specTools.get(toolName));
      for (const p of HOOK_PATH_PARAMS[toolName] ?? []) hints.pathParams.add(p);
      const arb = toolCase(tool.inputSchema, hints);
      const validate = oracle.get(toolName)!;
      const examples = (REGRESSIONS[toolName] ?? []).map((c) => [c] as [ToolCase]);
      const params = { numRuns: RUNS, seed: SEED };
      let planned = 0;
      try {
        await fc.assert(
          fc.asyncProperty(arb, async (c) => {
            tally.tried++;
            const schemaValid = validate(structuredClone(c.input));
            const out = await executeInProcess(toolName, structuredClone(c.input));
            if (checkOutcome(toolName, c, schemaValid, hints, out) === 'planned') planned++;
            assertNoPollution();
          }),
          { ...params, examples },
        );
        // Not vacuous: the generated valid inputs do reach the request builder.
        if (planned < tally.fewestPlanned) [tally.fewestPlanned, tally.fewestTool] = [planned, toolName];
        expect(planned, 'valid inputs planned').toBeGreaterThan(RUNS / 50);
      } catch (e) {
        tally.failed++;
        throw e;
      }
      try {
        await fc.assert(
          fc.asyncProperty(arb.filter(httpCase), async (c) => {
            tally.http++;
            const schemaValid = validate(JSON.parse(JSON.stringify(c.input)));
            checkOutcome(toolName, c, schemaValid, hints, await executeOverHttp(toolName, c.input));
          }),
          { ...params, numRuns: HTTP_RUNS },
        );
      } catch (e) {
        tally.httpFailed++;
        throw e;
      }
    },
  );
});
