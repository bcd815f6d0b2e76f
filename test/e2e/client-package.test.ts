/**
 * The client package (issue 36, item 4): packages/client packed with `npm pack` (its prepack builds it with tsc),
 * installed from the tarball into a scratch project with `npm install --offline` (its dependencies packed from this
 * project's node_modules, so no registry is asked), then used by a plain JavaScript program of that project against
 * the running service: an account connected, a tool called through to a fake provider, a refusal as
 * ConnectorServiceError, and a webhook delivery received and verified with verifyWebhook (a changed body refused).
 * A TypeScript file of the scratch project type-checks against the package's declarations.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDesk } from '../fakes/desk.ts';
import { startHarness, TEST_CLIENT_ID, TEST_CLIENT_SECRET, type Harness } from '../helpers/harness.ts';
import { childEnv, ROOT } from '../helpers/project-copy.ts';

const run = promisify(execFile);
const PACKAGE = join(ROOT, 'packages/client');
const DOMAIN = 'packaged.zendesk.com';
const EMAIL = 'agent@packaged.example';
const TOKEN = 'desk-token-packaged-0123456789';

const scratch = mkdtempSync(join(tmpdir(), 'acs-client-package-'));
const tarballs = join(scratch, 'tarballs');
const project = join(scratch, 'project');
let h: Harness;
let desk: FakeDesk;

/** The package's runtime dependencies and theirs, as installed in this project's node_modules. */
function dependencyClosure(names: string[]): string[] {
  const seen = new Set<string>();
  for (const queue = [...names]; queue.length;) {
    const name = queue.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const manifest = JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    queue.push(...Object.keys(manifest.dependencies ?? {}));
  }
  return [...seen];
}

async function npm(cwd: string, args: string[]): Promise<string> {
  const { stdout } = await run('npm', args, { cwd, env: childEnv(), maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

beforeAll(async () => {
  h = await startHarness({ env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_RETRY_BASE_MS: '40' } });
  desk = await new FakeDesk().start();
  desk.addTenant(DOMAIN, EMAIL, TOKEN);
  await h.client.createConnection({
    connection_name: 'helpdesk',
    connector: 'helpdesk',
    api_base_url: desk.baseUrlTemplate,
  });
}, 120_000);

afterAll(async () => {
  await h?.close();
  await desk?.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe('the client package', () => {
  it(
    'packs into a tarball of JavaScript and type declarations, without its sources',
    { timeout: 300_000 },
    async () => {
      await npm(PACKAGE, ['pack', '--pack-destination', scratch, '--silent']);
      const tarball = readdirSync(scratch).find((f) => f.endsWith('.tgz'))!;
      expect(tarball).toMatch(/^agent-connector-client-\d+\.\d+\.\d+\.tgz$/);
      const { stdout } = await run('tar', ['tzf', join(scratch, tarball)]);
      const files = stdout.trim().split('\n').sort();
      expect(files).toEqual(
        expect.arrayContaining(['package/package.json', 'package/dist/index.js', 'package/dist/index.d.ts']),
      );
      expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
      // The built code imports nothing of the service: only its own files and its declared dependency.
      const { stdout: js } = await run('tar', ['xzOf', join(scratch, tarball), 'package/dist/index.js']);
      const imports = [...js.matchAll(/^(?:import|export)[^'"]*from '([^']+)'/gm)].map((m) => m[1]);
      expect(imports.filter((m) => !m!.startsWith('./') && m !== 'standardwebhooks')).toEqual([]);
      copyFileSync(join(scratch, tarball), join(scratch, 'client.tgz'));
    },
  );

  it(
    'installs from the tarball with no registry, and works against the running service',
    { timeout: 300_000 },
    async () => {
      // The dependencies, packed from this project's node_modules: `npm install --offline` then asks no registry.
      mkdirSync(tarballs);
      mkdirSync(project);
      const deps = dependencyClosure(
        Object.keys(
          (JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8')) as { dependencies: object }).dependencies,
        ),
      );
      for (const dep of deps)
        await npm(tarballs, [
          'pack',
          '--ignore-scripts',
          '--silent',
          '--pack-destination',
          tarballs,
          join(ROOT, 'node_modules', dep),
        ]);
      copyFileSync(join(scratch, 'client.tgz'), join(tarballs, 'client.tgz'));
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
      const packed = readdirSync(tarballs).map((f) => join(tarballs, f));
      await npm(project, ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', ...packed]);

      copyFileSync(join(ROOT, 'test/fixtures/client-package/usage.mjs'), join(project, 'usage.mjs'));
      const { stdout } = await run(process.execPath, ['usage.mjs'], {
        cwd: project,
        env: {
          PATH: process.env.PATH,
          ENV_URL: h.url,
          CLIENT_ID: TEST_CLIENT_ID,
          CLIENT_SECRET: TEST_CLIENT_SECRET,
          DESK_DOMAIN: DOMAIN,
          DESK_EMAIL: EMAIL,
          DESK_TOKEN: TOKEN,
        },
      });
      const out = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, any>;
      expect(out.connectors).toContain('helpdesk');
      expect(out.accountStatus).toBe('ACTIVE');
      expect(out.tool).toContain('Support');
      expect(out.tool).toContain('Billing');
      expect(out.refused).toEqual({ status: 400, code: 'invalid_input' });
      expect(out.webhook).toMatchObject({
        type: 'connected_account.created',
        data: { identifier: 'packaged-user', connection_name: 'helpdesk', connector: 'helpdesk' },
      });
      expect(out.tampered).toBe('refused');
      // The fake desk saw the call the package made, with the account's credentials.
      expect(desk.requests.some((r) => r.path.endsWith('/groups') && r.authorization?.startsWith('Basic '))).toBe(true);
    },
  );

  it("type-checks a program against the package's declarations", { timeout: 300_000 }, async () => {
    writeFileSync(join(project, 'consumer.ts'), CONSUMER);
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    const args = [
      '--noEmit',
      '--strict',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--target',
      'es2022',
    ];
    args.push('--types', 'node', '--typeRoots', join(ROOT, 'node_modules/@types'), 'consumer.ts');
    const result = await run(process.execPath, [tsc, ...args], { cwd: project }).then(
      () => '',
      (e: { stdout?: string }) => e.stdout ?? 'failed',
    );
    expect(result).toBe('');
    // And the check has teeth: a wrong input type is an error.
    writeFileSync(join(project, 'consumer.ts'), CONSUMER.replace('// @ts-expect-error', '//'));
    const wrong = await run(process.execPath, [tsc, ...args], { cwd: project }).then(
      () => '',
      (e: { stdout?: string }) => e.stdout ?? 'failed',
    );
    expect(wrong).toMatch(/consumer\.ts\(\d+,\d+\): error TS\d+:.*pages/);
  });
});

/** A TypeScript program of the scratch project, written against the package's declarations. */
const CONSUMER = `// Type-checked against the packed client's declarations (test/e2e/client-package.test.ts): the typed tool inputs
// and the API's types come with the package.
import { AgentConnectorClient, verifyWebhook, type ConnectedAccount, type WebhookEventBody } from 'agent-connector-client';

export async function groups(client: AgentConnectorClient): Promise<unknown> {
  const { data } = await client.executeTool({
    toolName: 'helpdesk_groups_list',
    connectionName: 'helpdesk',
    identifier: 'user-1',
    toolInput: { page: 1, per_page: 50 },
  });
  return data;
}

export function status(account: ConnectedAccount): string {
  return account.status;
}

export function event(body: string, headers: Record<string, string>, secret: string): WebhookEventBody['type'] {
  return verifyWebhook(body, headers, secret).type;
}

// @ts-expect-error -- helpdesk_groups_list has no parameter "pages": the package's types know each tool's input
export const wrong = (c: AgentConnectorClient) => c.executeTool({ toolName: 'helpdesk_groups_list', connectionName: 'x', identifier: 'y', toolInput: { pages: 1 } });
`;
