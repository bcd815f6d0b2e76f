/**
 * What a new user does first, as the docs say it: the shell blocks of docs/http-api.md ("Calling it") and of
 * docs/mcp-and-agents.md ("Over MCP") run as written against a started service; the first start prints its
 * credential as lines a shell takes as they are; `npm run demo` starts and the commands it prints work; a mistake
 * in the start-up settings is one line naming the variable; `/` and the natural guesses at the dashboard's sign-in
 * page lead somewhere useful; the README stays an index.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, TEST_CLIENT_ID, TEST_CLIENT_SECRET, type Harness } from '../helpers/harness.ts';
import { spawnService } from '../helpers/service-process.ts';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

/** The ```sh blocks of one `## ` section of a page, in order. */
function shellBlocks(page: string, section: string): string[] {
  const text = read(page);
  const start = text.indexOf(`\n## ${section}\n`);
  expect(start, `${page}, section "${section}"`).toBeGreaterThan(-1);
  const end = text.indexOf('\n## ', start + 1);
  const part = text.slice(start, end < 0 ? undefined : end);
  return [...part.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/**
 * Runs a script in bash with -eu -o pipefail; resolves with its exit code and output. Its standard input is not a
 * socket (node's default pipes are socket pairs): Debian's bash reads /etc/bash.bashrc when it is, and that file's
 * `$PS1` test fails under -u wherever PS1 is not exported.
 */
function bash(
  script: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn('bash', ['-euo', 'pipefail', '-c', script], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the README, as a new user reads it', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h?.close());

  it('runs the shell blocks of docs/http-api.md and docs/mcp-and-agents.md as written', async () => {
    const blocks = shellBlocks('docs/http-api.md', 'Calling it');
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    const mcp = shellBlocks('docs/mcp-and-agents.md', 'Over MCP');
    expect(mcp).toHaveLength(1);
    const { code, stdout, stderr } = await bash([...blocks, ...mcp].join('\n'), {
      ENV_URL: h.url,
      CLIENT_ID: TEST_CLIENT_ID,
      CLIENT_SECRET: TEST_CLIENT_SECRET,
    });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    // Every call answered as the docs mean it to: no error anywhere in what the blocks printed.
    expect(stdout).not.toContain('"error"');
    expect(stdout).toContain('helpdesk_ticket_get');
    expect(stdout).toContain('"url": "https://acme.zendesk.com/api/v2/tickets/123"');
    expect(stdout).toContain('"authorization": "Basic [REDACTED]"');
    expect(stdout).toMatch(new RegExp(`^${h.url}/sso/v1/oauth/conn_[\\w-]+/callback$`, 'm'));
    expect(stdout).toMatch(new RegExp(`^${h.url}/sso/v1/oauth/conn_[\\w-]+/authorize\\?link=`, 'm'));
    const connection = await h.client.getConnection('mail');
    expect(connection.scopes).toEqual(['offline_access', 'User.Read', 'Mail.Read']);
    // The MCP block set $MCP_SERVER_ID itself and printed the end user's URL.
    expect(stdout).toMatch(new RegExp(`^${h.url}/mcp/[\\w-]+$`, 'm'));
  });

  it('answers / with links for an API client and sends a browser to the dashboard', async () => {
    const json = await fetch(`${h.url}/`, { headers: { accept: 'application/json' } });
    expect(json.status).toBe(200);
    const { links } = (await json.json()) as { links: Record<string, string> };
    for (const link of Object.values(links)) {
      const res = await fetch(link, { redirect: 'manual' });
      expect(res.status, link).toBeLessThan(400);
    }
    const html = await fetch(`${h.url}/`, { headers: { accept: 'text/html' }, redirect: 'manual' });
    expect(html.status).toBe(302);
    expect(html.headers.get('location')).toBe(`${h.url}/dashboard`);
  });

  it('leads /dashboard/login to the sign-in page, and on to the dashboard after signing in', async () => {
    for (const guess of ['/dashboard/login', '/dashboard/log-in', '/dashboard/signin']) {
      const res = await fetch(`${h.url}${guess}`, { redirect: 'manual' });
      expect(res.status, guess).toBe(303);
      expect(res.headers.get('location'), guess).toBe('/dashboard/sign-in');
    }
  });
});

describe('the first start', () => {
  it('prints the credential as lines a shell takes as they are, which then get a token', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'acs-first-start-'));
    const service = await spawnService({ PATH: process.env.PATH ?? '', PORT: '0', DATA_DIR: dataDir });
    try {
      while (!service.output.join('').includes('export CLIENT_SECRET=')) await new Promise((r) => setTimeout(r, 50));
      const exports = service.output
        .join('')
        .split('\n')
        .filter((line) => line.startsWith('export '));
      expect(exports.map((l) => l.split('=')[0])).toEqual([
        'export ENV_URL',
        'export CLIENT_ID',
        'export CLIENT_SECRET',
      ]);
      const script = `${exports.join('\n')}\ncurl -s -u "$CLIENT_ID:$CLIENT_SECRET" -d grant_type=client_credentials "$ENV_URL/oauth/token" | jq -r .token_type`;
      const { code, stdout, stderr } = await bash(script, {});
      expect(stderr).toBe('');
      expect(code).toBe(0);
      expect(stdout.trim()).toBe('Bearer');
    } finally {
      service.proc.kill('SIGTERM');
      await service.exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('the README', () => {
  const readme = read('README.md');
  it('is an index of at most 250 lines', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
  });
  it('links pages that exist, and claims no time a check does not produce', () => {
    for (const [, target] of readme.matchAll(/\]\(((?:docs|generated)\/[^)#]+|SECURITY\.md)\)/g)) {
      expect(target).toMatch(/\.md$/);
      expect(existsSync(new URL(`../../${target}`, import.meta.url)), target).toBe(true);
    }
    expect(readme).not.toMatch(/in seconds|about a minute|a few seconds|minutes? on/i);
  });
});

describe('start-up mistakes', () => {
  const cases: Array<[string, Record<string, string>, RegExp]> = [
    ['a short ADMIN_PASSWORD', { ADMIN_PASSWORD: 'short' }, /^ADMIN_PASSWORD must have at least 12 characters/],
    ['a PORT that is not a number', { PORT: 'abc' }, /^PORT must be a whole number from 0 to 65535, got "abc"$/],
    [
      'an unreachable DATABASE_URL',
      { DATABASE_URL: 'postgres://someone:hunter22@127.0.0.1:9/nowhere' },
      /^DATABASE_URL: cannot use PostgreSQL at postgres:\/\/someone:\*\*\*@127\.0\.0\.1:9\/nowhere: nothing is listening there \(ECONNREFUSED\)$/,
    ],
  ];
  it.each(cases)('%s is one line naming the variable, and exit code 1', async (_name, env, line) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'acs-startup-'));
    try {
      const { code, stdout, stderr } = await bash('exec node --import tsx runtime/main.ts', {
        ...env,
        DATA_DIR: dataDir,
        LOG_LEVEL: 'silent',
      });
      expect(code).toBe(1);
      expect(stdout).toBe('');
      const lines = stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]!.replace(/^agent connector service cannot start: /, '')).toMatch(line);
      expect(stderr).not.toContain('hunter22');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('npm run demo', () => {
  it('starts on any free port and the commands it prints work as printed', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'acs-demo-'));
    const demo = spawn(process.execPath, ['--import', 'tsx', 'test/demo.ts'], {
      env: { ...process.env, DEMO_PORT: '0', DEMO_DATA_DIR: dataDir, LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      let printed = '';
      await new Promise<void>((resolve, reject) => {
        demo.stdout.on('data', (d: Buffer) => {
          printed += d.toString();
          if (printed.includes('(Ctrl-C to stop)')) resolve();
        });
        demo.once('exit', (code) => reject(new Error(`the demo exited with ${code}: ${printed}`)));
      });
      const commands = printed.slice(printed.indexOf('Try it:') + 'Try it:'.length, printed.indexOf('API credential'));
      const { code, stdout, stderr } = await bash(commands.replace(/\\\n/g, ' '), {});
      expect(stderr).toBe('');
      expect(code).toBe(0);
      const answers = stdout.split(/(?<=\})(?=\{)/);
      expect(answers).toHaveLength(5);
      expect(answers.slice(0, 4).every((a) => !a.includes('"error"'))).toBe(true);
      expect(answers[4]).toContain('"code":"invalid_input"');
      expect(answers[4]).toContain('"field":"page"');
    } finally {
      demo.kill('SIGTERM');
      await new Promise((r) => demo.once('exit', r));
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
