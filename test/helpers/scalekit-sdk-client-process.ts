/**
 * The client side of a Scalekit SDK run in a process of its own (test/e2e/scalekit-sdk-tls.test.ts): the SDK, the
 * client library and fetch, trusting exactly what this process's NODE_EXTRA_CA_CERTS adds to Node's CAs, as a
 * client application would be configured. Reads the server side from SCALEKIT_SERVER_SIDE (JSON), creates the
 * connections, runs every scenario in order, and writes one JSON object to stdout: each scenario's name, whether
 * it passed, and its error.
 */
import { clientSide, createConnections, sdkScenarios, type ServerSide } from './scalekit-sdk-scenarios.ts';

export interface ScenarioResult {
  name: string;
  ok: boolean;
  error?: string;
}

const failure = (e: unknown) => (e instanceof Error ? (e.stack ?? e.message) : String(e));

const raw = process.env.SCALEKIT_SERVER_SIDE;
if (!raw) throw new Error('SCALEKIT_SERVER_SIDE is not set: the JSON of the server side (ServerSide)');
const c = clientSide(JSON.parse(raw) as ServerSide);
const results: ScenarioResult[] = [];
try {
  await createConnections(c);
  for (const scenario of sdkScenarios) {
    try {
      await scenario.run(c);
      results.push({ name: scenario.name, ok: true });
    } catch (e) {
      results.push({ name: scenario.name, ok: false, error: failure(e) });
    }
  }
} catch (e) {
  results.push({ name: 'creating the connections', ok: false, error: failure(e) });
}
// The SDK keeps its HTTP/2 session open: exit once the answer is written.
process.stdout.write(JSON.stringify(results) + '\n', () => process.exit(0));
