/**
 * `npx tsx bench/client-micro.ts [rounds]`: the CPU an upstream request costs the client that sends it, for the
 * three ways the service could send a tool call's request: `node:http` on the same keep-alive agent (the least a
 * Node client can be), got's call API (`got.stream(url, options)`, which merges the options of every call into a
 * copy of the instance's), and the service's own (`clientFor(...).stream(...)`, got on options built once:
 * runtime/upstream/got-client.ts, PreparedClient). The fake upstream (bench/upstream.ts) runs on the load core; this
 * process, the client, on the test core. Each round sends 40 000 requests, 32 in flight, the same headers a tool
 * call sends, and reads the whole answer; this process's CPU over them (`process.cpuUsage`) per request. The
 * three alternate within each round, after a warm-up round; every round is printed, then the medians.
 */
import http from 'node:http';
import { clientFor, keepAliveAgents } from '../runtime/upstream/got-client.ts';
import { TICKET_PATH } from './service.ts';
import { ensureTools, freePort, median, pinSelf, startHelper, stop } from './system.ts';

const rounds = Number(process.argv[2] ?? 5);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error('usage: bench/client-micro.ts [rounds]');
const LOAD_CORE = 0;
const TEST_CORE = 1;
const REQUESTS = 40_000;
const IN_FLIGHT = 32;
const ROOT = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
ensureTools();
pinSelf(TEST_CORE);

const port = await freePort();
const upstream = await startHelper(LOAD_CORE, ROOT, 'bench/upstream.ts', [String(port)]);

const url = `http://127.0.0.1:${port}/api${TICKET_PATH}`;
// What a tool call's request carries (core/request-headers.ts, with an API token).
const headers = {
  accept: 'application/json',
  'user-agent': 'agent-connector-service',
  authorization: 'Basic YmVuY2hAZXhhbXBsZS5jb20vdG9rZW46YmVuY2gtdG9rZW4=',
};
const client = clientFor(10_000, 60_000, false, true);

/** Reads a stream's answer to its end, as runtime/upstream/http.ts does. */
const drain = (s: NodeJS.ReadableStream) =>
  new Promise<number>((resolve, reject) => {
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('end', () => resolve(Buffer.concat(chunks).length));
    s.on('error', reject);
  });

const ways: Record<string, () => Promise<number>> = {
  'node:http': () =>
    new Promise<number>((resolve, reject) => {
      const req = http.request(url, { agent: keepAliveAgents.http, headers }, (res) => {
        drain(res).then(resolve, reject);
      });
      req.on('error', reject);
      req.end();
    }),
  "got's call API": () => drain(client.got.stream(url, { method: 'GET', headers })),
  'the service (prebuilt options)': () => drain(client.stream(url, { method: 'GET', headers })),
};

async function measure(send: () => Promise<number>): Promise<{ cpu: number; rps: number }> {
  let started = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (started < REQUESTS) {
        started++;
        if ((await send()) === 0) throw new Error('an empty answer');
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  return { cpu: (cpu.user + cpu.system) / REQUESTS, rps: REQUESTS / ((performance.now() - t0) / 1000) };
}

for (const send of Object.values(ways)) await measure(send);
const results: Record<string, number[]> = {};
console.log(`client CPU per request, ${rounds} rounds of ${REQUESTS} requests, ${IN_FLIGHT} in flight:`);
for (let round = 1; round <= rounds; round++) {
  const order = Object.entries(ways);
  for (const [name, send] of round % 2 ? order : order.reverse()) {
    const r = await measure(send);
    (results[name] ??= []).push(r.cpu);
    console.log(
      `  round ${round} ${name.padEnd(32)} ${r.rps.toFixed(0).padStart(6)} req/s  ${r.cpu.toFixed(1).padStart(6)} µs`,
    );
  }
}
console.log('medians:');
for (const [name, cpus] of Object.entries(results)) console.log(`  ${name.padEnd(32)} ${median(cpus).toFixed(1)} µs`);
await stop(upstream);
process.exit(0);
