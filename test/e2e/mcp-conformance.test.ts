/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in devDependencies) against an end
 * user's MCP URL of a running service, once per protocol era: 2025-11-25 (the initialize handshake) and 2026-07-28
 * (stateless, per-request `_meta`). Every server scenario of the suite runs; the only ones allowed to fail are listed
 * in test/conformance/expected-failures-<revision>.yaml, each needing the suite's own fixture server (tools, resources
 * and prompts with fixed names). The suite's exit code says whether anything else failed — or whether a listed
 * scenario started passing (a stale entry fails too).
 *
 * The suite imports `fs.globSync` (Node 22); on Node 20 it runs behind test/conformance/fs-glob-hook.mjs, a module
 * resolve hook (`node --import`) that gives the suite's `fs` import a `globSync` (tinyglobby).
 *
 * By hand: start the service, make a URL (POST /v1/mcp-servers/{id}/urls), then
 *   node --import ./test/conformance/fs-glob-hook.mjs node_modules/@modelcontextprotocol/conformance/dist/index.js \
 *     server --url <url> --suite all --spec-version 2026-07-28 \
 *     --expected-failures test/conformance/expected-failures-2026-07-28.yaml
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { FakeDesk } from '../fakes/desk.ts';
import { serviceToken, startHarness, type Harness } from '../helpers/harness.ts';
import { record } from '../reliability/summary.ts';

const ROOT = join(import.meta.dirname, '../..');
const SUITE = join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const HOOK = join(ROOT, 'test/conformance/fs-glob-hook.mjs');
/** The suite runs some forty scenarios one after another, each over real HTTP: minutes on a busy machine. */
const HUNG_AFTER_MS = 600_000;

/** Scenarios the issue names: each must pass outright (never be in an expected-failures file). */
const REQUIRED: Record<'2025-11-25' | '2026-07-28', string[]> = {
  '2025-11-25': ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection', 'logging-set-level'],
  '2026-07-28': [
    'server-stateless',
    'tools-list',
    'dns-rebinding-protection',
    'caching',
    'http-header-validation',
    'sep-2164-resource-not-found',
    'resources-list',
    'prompts-list',
  ],
};

let h: Harness;
let desk: FakeDesk;
let url: string;

beforeAll(async () => {
  h = await startHarness();
  desk = await new FakeDesk().start();
  desk.addTenant('acme.zendesk.com', 'agent@acme.com', 'zd-api-token-conformance-4b1');
  const token = await serviceToken(h.url);
  const api = async (path: string, body: unknown): Promise<Record<string, string>> => {
    const res = await fetch(`${h.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status, path).toBeLessThan(300);
    return (await res.json()) as Record<string, string>;
  };
  await api('/v1/connections', {
    connection_name: 'helpdesk',
    connector: 'helpdesk',
    api_base_url: desk.baseUrlTemplate,
  });
  const server = await api('/v1/mcp-servers', { name: 'support', connections: ['helpdesk'] });
  url = (await api(`/v1/mcp-servers/${server.id}/urls`, { identifier: 'ada' })).url!;
});

afterAll(async () => {
  await desk?.close();
  await h?.close();
});

interface Outcome {
  code: number | null;
  output: string;
  /** scenario → [passed checks, failed checks] from the suite's summary. */
  scenarios: Map<string, [number, number]>;
}

function runSuite(revision: string, expectedFailures: string): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        HOOK,
        SUITE,
        'server',
        '--url',
        url,
        '--suite',
        'all',
        '--spec-version',
        revision,
        '--expected-failures',
        expectedFailures,
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const scenarios = new Map<string, [number, number]>();
      for (const m of output.matchAll(/^[✓✗] (\S+): (\d+) passed, (\d+) failed/gmu)) {
        scenarios.set(m[1]!, [Number(m[2]), Number(m[3])]);
      }
      resolve({ code, output, scenarios });
    });
  });
}

describe.each(['2025-11-25', '2026-07-28'] as const)('the MCP conformance suite at revision %s', (revision) => {
  const file = join(ROOT, `test/conformance/expected-failures-${revision}.yaml`);
  const expected = (parse(readFileSync(file, 'utf8')) as { server: string[] }).server;
  const expectedScenarios = new Set(expected.map((e) => e.split(':')[0]));

  it('lists as expected failures only scenarios needing the fixture server, never a required one', () => {
    for (const name of REQUIRED[revision]) {
      expect(
        expected.filter((e) => e === name),
        `${name} must pass outright`,
      ).toEqual([]);
    }
    // Each entry carries its reason (a comment naming the fixture tool, resource or prompt it needs).
    const lines = readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.trim().startsWith('- '));
    expect(lines.length).toBe(expected.length);
    for (const l of lines) expect(l, 'an entry without its reason').toMatch(/ # \S.{8,}$/);
  });

  it(
    'passes every scenario but those needing the fixture server',
    async () => {
      const outcome = await runSuite(revision, file);
      const passed = [...outcome.scenarios].filter(([, [, failed]]) => failed === 0);
      const failed = [...outcome.scenarios].filter(([, [, f]]) => f > 0);
      record({
        category: 'MCP conformance',
        what: `server scenarios at ${revision} against an end user's MCP URL`,
        tried: outcome.scenarios.size,
        failed: failed.filter(([name]) => !expectedScenarios.has(name)).length,
        detail: `${passed.length} passed outright, ${failed.length} with failed checks needing the fixture server`,
      });
      expect(outcome.code, outcome.output.slice(outcome.output.indexOf('=== SUMMARY'))).toBe(0);
      expect(outcome.scenarios.size).toBeGreaterThan(20);
      for (const name of REQUIRED[revision]) {
        expect(outcome.scenarios.get(name), `${name} ran`).toBeDefined();
        const [ok, bad] = outcome.scenarios.get(name)!;
        // Only the checks the file lists one by one may fail (server-stateless: four call fixture tools).
        expect(bad, `${name} failed checks`).toBe(expected.filter((e) => e.startsWith(`${name}:`)).length);
        expect(ok, `${name} passed checks`).toBeGreaterThan(0);
      }
      // A scenario with failed checks is one the file lists (whole, or the failing checks one by one).
      for (const [name] of failed) expect(expectedScenarios.has(name), `${name} failed unexpectedly`).toBe(true);
    },
    HUNG_AFTER_MS,
  );
});
