/**
 * The container image (issue 36, item 5), built and run for real with Debian's podman and buildah: a base image made
 * with debootstrap plus this machine's Node (no registry can serve one here; the Dockerfile takes its base as the
 * BASE_IMAGE build argument), the Dockerfile built with `buildah build --isolation chroot`, the image run with the
 * runc runtime (and `default_ulimits = []`, in a containers.conf of this test's own). Checked: the image's user,
 * volume, healthcheck and command; `/ready` and the HEALTHCHECK through the running container; a tool call through
 * the container to a fake provider on this machine; node as PID 1 running as the non-root user; the SQLite store
 * on the volume; and SIGTERM (`podman stop`) stopping the service cleanly.
 *
 * Needs root (debootstrap, rootful podman) and the Debian packages podman, buildah, debootstrap and runc
 * (`.ci/run` installs them).
 */
import { execFile } from 'node:child_process';
import {
  appendFileSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentConnectorClient } from '../../packages/client/src/index.ts';
import { FakeDesk } from '../fakes/desk.ts';
import { freePort, TEST_CLIENT_ID, TEST_CLIENT_SECRET } from '../helpers/harness.ts';
import { ROOT } from '../helpers/project-copy.ts';

const execFileAsync = promisify(execFile);
const work = mkdtempSync(join(tmpdir(), 'acs-container-'));
const conf = join(work, 'containers.conf');
const nodeVersion = process.versions.node;
const BASE = `localhost/acs-test-base:node-${nodeVersion}`;
const IMAGE = 'localhost/acs-test-service:latest';
const CONTAINER = `acs-test-${process.pid}`;
const dataDir = join(work, 'data');
const DOMAIN = 'boxed.zendesk.com';
const EMAIL = 'agent@boxed.example';
const TOKEN = 'desk-token-boxed-0123456789';
let desk: FakeDesk;
let url: string;

async function sh(cmd: string, args: string[]): Promise<string> {
  const env = { ...process.env, CONTAINERS_CONF: conf };
  try {
    return (await execFileAsync(cmd, args, { env, maxBuffer: 256 * 1024 * 1024 })).stdout;
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${(err.stderr ?? '').slice(-4000)}`, {
      cause: e,
    });
  }
}

/**
 * The base image: a minimal Debian (debootstrap, from the Debian mirror apt uses) with this machine's Node, npm and
 * Node's headers, npm's global configuration and the CA bundle npm trusts here. Made once per Node version.
 */
async function baseImage(): Promise<void> {
  const exists = await sh('podman', ['image', 'exists', BASE]).then(
    () => true,
    () => false,
  );
  if (exists) return;
  const rootfs = join(work, 'rootfs');
  const mirror = (
    await sh('sh', ['-c', "grep -hoE '^URIs: *http[^ ]+/debian/?$' /etc/apt/sources.list.d/*.sources || true"])
  )
    .split('\n')[0]
    ?.replace(/^URIs: */, '');
  await sh('debootstrap', ['--variant=minbase', 'bookworm', rootfs, mirror || 'http://deb.debian.org/debian']);
  const node = process.execPath;
  const prefix = join(node, '..', '..');
  // Each path's parent made first, then the path copied to the same place: `cp --parents` fails on this machine's
  // coreutils when it has to make a parent itself ("usr/etc: No such file or directory").
  const copy = async (from: string) => {
    if (!existsSync(from)) return;
    mkdirSync(join(rootfs, dirname(from)), { recursive: true });
    await sh('cp', ['-a', from, join(rootfs, from)]);
  };
  for (const p of [node, join(prefix, 'lib/node_modules'), join(prefix, 'include/node'), join(prefix, 'etc/npmrc')])
    await copy(p);
  for (const tool of ['npm', 'npx']) await copy(join(prefix, 'bin', tool));
  // npm's global configuration, with node-gyp pointed at the copied headers (better-sqlite3 is compiled where no
  // prebuilt binary can be fetched).
  mkdirSync(join(rootfs, prefix, 'etc'), { recursive: true });
  appendFileSync(join(rootfs, prefix, 'etc/npmrc'), `\nnodedir=${prefix}\n`);
  await copy('/etc/ssl/certs/ca-certificates.crt');
  await sh('sh', [
    '-c',
    `tar -C '${rootfs}' -c . | podman import --change ENV=NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt - '${BASE}'`,
  ]);
  rmSync(rootfs, { recursive: true, force: true });
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, tries = 600): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`gave up waiting for ${what}`);
}

beforeAll(async () => {
  writeFileSync(conf, '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n');
  for (const tool of ['podman', 'buildah', 'debootstrap', 'runc'])
    await sh('sh', ['-c', `command -v ${tool}`]).catch(() => {
      throw new Error(`${tool} is not installed: apt-get install podman buildah debootstrap runc (.ci/run does)`);
    });
  await baseImage();
  await sh('buildah', [
    'build',
    '--isolation',
    'chroot',
    '--layers',
    // Docker's image format: OCI's has no HEALTHCHECK, and buildah would drop it.
    '--format',
    'docker',
    '--pull=never',
    '--build-arg',
    `BASE_IMAGE=${BASE}`,
    '-t',
    IMAGE,
    ROOT,
  ]);
  desk = await new FakeDesk().start();
  desk.addTenant(DOMAIN, EMAIL, TOKEN);
  mkdirSync(dataDir);
  chownSync(dataDir, 10001, 10001);
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  await sh('podman', [
    'run',
    '--detach',
    '--name',
    CONTAINER,
    '--network',
    'host',
    '--volume',
    `${dataDir}:/data`,
    '--env',
    `PORT=${port}`,
    '--env',
    'HOST=127.0.0.1',
    // The fake provider listens on this machine's loopback, which a connection may name only when it is listed.
    '--env',
    'UPSTREAM_ALLOWED_HOSTS=127.0.0.1,localhost,[::1]',
    '--env',
    `INITIAL_CLIENT_ID=${TEST_CLIENT_ID}`,
    '--env',
    `INITIAL_CLIENT_SECRET=${TEST_CLIENT_SECRET}`,
    IMAGE,
  ]);
}, 60 * 60_000);

afterAll(async () => {
  await sh('podman', ['rm', '--force', '--time', '0', CONTAINER]).catch(() => undefined);
  await desk?.close();
  rmSync(work, { recursive: true, force: true });
});

describe('the container image', () => {
  it('runs as a non-root user, keeps its data in a volume, checks /ready and runs node directly', async () => {
    const [config] = JSON.parse(await sh('podman', ['image', 'inspect', IMAGE])) as Array<{
      Config: { User: string; Volumes: Record<string, unknown>; Cmd: string[]; Entrypoint?: string[] | null };
    }>;
    expect(config!.Config.User).toBe('10001:10001');
    expect(Object.keys(config!.Config.Volumes)).toEqual(['/data']);
    expect(config!.Config.Cmd).toEqual(['node', 'dist/runtime/main.js']);
    expect(config!.Config.Entrypoint ?? []).toEqual([]);
    const health = await sh('podman', ['image', 'inspect', '--format', '{{json .HealthCheck}}', IMAGE]);
    expect((JSON.parse(health) as { Test: string[] }).Test.join(' ')).toContain('/ready');
  });

  it('answers /ready, and its HEALTHCHECK passes', async () => {
    const status = await until('/ready', async () => {
      const res = await fetch(`${url}/ready`);
      return res.status === 200 ? res.status : undefined;
    });
    expect(status).toBe(200);
    await sh('podman', ['healthcheck', 'run', CONTAINER]);
    const health = await sh('podman', ['inspect', '--format', '{{.State.Health.Status}}', CONTAINER]);
    expect(health.trim()).toBe('healthy');
  });

  it('runs node as PID 1, as the non-root user', async () => {
    const cmdline = await sh('podman', ['exec', CONTAINER, 'cat', '/proc/1/cmdline']);
    expect(cmdline.split('\0').filter(Boolean)).toEqual(['node', 'dist/runtime/main.js']);
    expect((await sh('podman', ['exec', CONTAINER, 'id', '-u'])).trim()).toBe('10001');
  });

  it('calls a tool through the container, to a fake provider on this machine', async () => {
    const client = new AgentConnectorClient({
      clientId: TEST_CLIENT_ID,
      clientSecret: TEST_CLIENT_SECRET,
      envUrl: url,
    });
    await client.createConnection({
      connection_name: 'helpdesk',
      connector: 'helpdesk',
      api_base_url: desk.baseUrlTemplate,
    });
    await client.upsertConnectedAccount({
      connectionName: 'helpdesk',
      identifier: 'boxed-user',
      credentials: { domain: DOMAIN, email: EMAIL, api_token: TOKEN },
    });
    const { data } = await client.executeTool({
      toolName: 'helpdesk_groups_list',
      connectionName: 'helpdesk',
      identifier: 'boxed-user',
      toolInput: {},
    });
    expect(JSON.stringify(data)).toContain('Support');
    const seen = desk.requests.filter((r) => r.path.endsWith('/groups'));
    expect(seen.length).toBe(1);
    expect(seen[0]!.authorization).toBe(`Basic ${Buffer.from(`${EMAIL}/token:${TOKEN}`).toString('base64')}`);
  });

  it('keeps its store on the volume, and stops cleanly on SIGTERM', async () => {
    expect(readdirSync(dataDir).length).toBeGreaterThan(0);
    await sh('podman', ['stop', '--time', '60', CONTAINER]);
    const state = JSON.parse(await sh('podman', ['inspect', '--format', '{{json .State}}', CONTAINER])) as {
      ExitCode: number;
      Status: string;
    };
    expect(state.Status).toBe('exited');
    expect(state.ExitCode).toBe(0);
    const logs = await sh('podman', ['logs', CONTAINER]);
    expect(logs).toMatch(/stop|shut|drain/i);
  });
});
