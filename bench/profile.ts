/**
 * `npx tsx bench/profile.ts <scenario> [seconds]`: runs the service under `node --cpu-prof` while
 * autocannon drives one scenario (proxy-get, proxy-post, tool-read, tool-write), then prints the
 * functions with the most self time. For finding where the service's per-request cost goes.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { AgentConnectorClient } from '../runtime/client/index.ts';
import { freePort } from '../test/helpers/harness.ts';

const scenario = process.argv[2] ?? 'tool-read';
const seconds = Number(process.argv[3] ?? 8);
const ROOT = new URL('..', import.meta.url).pathname;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const upPort = await freePort();
const up = spawn(process.execPath, ['--import', 'tsx', 'bench/upstream.ts', 'upstream', String(upPort)], {
  cwd: ROOT,
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
await new Promise((r) => up.once('message', r));
const upstreamUrl = `http://127.0.0.1:${upPort}`;
const port = await freePort();
const profDir = mkdtempSync(join(os.tmpdir(), 'acs-prof-'));
const svc = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${profDir}`, '--import', 'tsx', 'runtime/main.ts'], {
  cwd: ROOT,
  env: {
    ...process.env,
    PORT: String(port),
    DATA_DIR: mkdtempSync(join(os.tmpdir(), 'acs-prof-data-')),
    INITIAL_CLIENT_ID: 'p',
    INITIAL_CLIENT_SECRET: 'profile_secret_0123456789abcdef',
    LOG_LEVEL: 'warn',
  },
  stdio: ['ignore', 'ignore', 'inherit'],
});
const url = `http://127.0.0.1:${port}`;
for (;;) {
  try {
    if ((await fetch(`${url}/health`)).ok) break;
  } catch {
    await sleep(50);
  }
}
const client = new AgentConnectorClient({
  clientId: 'p',
  clientSecret: 'profile_secret_0123456789abcdef',
  envUrl: url,
});
await client.createConnection({
  connection_name: 'helpdesk',
  connector: 'helpdesk',
  api_base_url: `${upstreamUrl}/desks/{domain}/api`,
});
await client.upsertConnectedAccount({
  connectionName: 'helpdesk',
  identifier: 'b',
  credentials: { domain: 'acme.zendesk.com', email: 'b@acme.com', api_token: 'bench-token-123456' },
});
await client.createConnection({
  connection_name: 'mail',
  connector: 'mail',
  client_id: 'c',
  client_secret: 's',
  api_base_url: upstreamUrl,
  oauth: { token_url: `${upstreamUrl}/oauth/token` },
});
await client.upsertConnectedAccount({
  connectionName: 'mail',
  identifier: 'b',
  credentials: { access_token: 'a', refresh_token: 'r', expires_in: 3600 },
});
const token = (
  (await (
    await fetch(`${url}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({ client_id: 'p', client_secret: 'profile_secret_0123456789abcdef' }),
    })
  ).json()) as { access_token: string }
).access_token;
const auth = { authorization: `Bearer ${token}` };
const opts = {
  'proxy-get': { url: `${url}/proxy/v2/tickets/1`, headers: { ...auth, connection_name: 'helpdesk', identifier: 'b' } },
  'proxy-post': {
    url: `${url}/proxy/v2/tickets`,
    method: 'POST',
    headers: { ...auth, connection_name: 'helpdesk', identifier: 'b', 'content-type': 'application/json' },
    body: JSON.stringify({ x: 'y'.repeat(10_000) }),
  },
  'tool-read': {
    url: `${url}/v1/tools/execute`,
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({
      tool_name: 'helpdesk_ticket_get',
      connection_name: 'helpdesk',
      identifier: 'b',
      tool_input: { ticket_id: 123, include: 'users' },
    }),
  },
  'tool-write': {
    url: `${url}/v1/tools/execute`,
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({
      tool_name: 'mail_send_message',
      connection_name: 'mail',
      identifier: 'b',
      tool_input: { toRecipients: ['a@x.com'], subject: 'Hi', body: 'x' },
    }),
  },
}[scenario]!;
const r = await autocannon({
  ...opts,
  method: (opts as { method?: string }).method ?? 'GET',
  connections: 32,
  duration: seconds,
} as never);
console.log(
  `${scenario}: ${r.requests.average} req/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, errors ${r.errors + r.non2xx}`,
);
svc.kill('SIGINT');
await new Promise((res) => svc.once('exit', res));
up.kill();

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
  children?: number[];
}
const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'))!;
const prof = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as { nodes: Node[] };
const self = new Map<string, number>();
let total = 0;
for (const n of prof.nodes) {
  const key = `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*node_modules\//, 'nm:').replace(ROOT, '')}:${n.callFrame.lineNumber + 1}`;
  self.set(key, (self.get(key) ?? 0) + n.hitCount);
  total += n.hitCount;
}
const byFile = new Map<string, number>();
for (const [k, v] of self) {
  const f = k.split(' ')[1]!.replace(/:\d+$/, '');
  byFile.set(f, (byFile.get(f) ?? 0) + v);
}
console.log('\nTop functions by self time:');
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30))
  console.log(`${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
console.log('\nTop files by self time:');
for (const [k, v] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 25))
  console.log(`${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
process.exit(0);
