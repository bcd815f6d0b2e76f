import type { AuthSpec } from '../../core/spec-model.ts';
import type { Connection } from '../store/types.ts';
import type { ConnectorDefinition, ToolDefinition, UpstreamRequest } from '../../core/tool-types.ts';
import { resolveBaseUrl } from '../connectors/catalog.ts';
import { shownHeaders } from '../../core/request-headers.ts';

export { baseHeaders, encodeBody, lowerKeys, mergeHeaders } from '../../core/request-headers.ts';

export interface PlannedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: unknown;
}

export interface PlanTarget {
  connector: ConnectorDefinition;
  connection: Pick<Connection, 'apiBaseUrl' | 'apiHosts' | 'authKind'>;
  fields: Record<string, string>;
  auth: AuthSpec;
}

/** Replaces every occurrence of the given secret values in a string or JSON value by [REDACTED]. */
export function redactValues<T>(value: T, secrets: readonly string[]): T {
  const live = secrets.filter((s) => s.length >= 4);
  if (!live.length) return value;
  const scrub = (s: string) => live.reduce((acc, secret) => acc.split(secret).join('[REDACTED]'), s);
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return scrub(v);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value) as T;
}

/** A request as a dry run shows it: every header that would be sent, credential values redacted. */
export function describeRequest(
  target: PlanTarget,
  r: UpstreamRequest,
  secretValues: readonly string[] = [],
): PlannedRequest {
  const headers = shownHeaders(target.connector, target.auth.apply, r);
  return redactValues(
    { method: r.method, url: r.url, headers, ...(r.body !== undefined ? { body: r.body } : {}) },
    secretValues,
  );
}

/** The values of a tool's secret inputs, to redact. */
export function secretValuesOf(tool: ToolDefinition, input: Record<string, unknown>): string[] {
  return (tool.secretInputs ?? []).map((k) => input[k]).filter((v): v is string => typeof v === 'string');
}

/**
 * The one dry-run planner (the executor's dry runs, the dashboard's, and the golden tests all come here): what
 * a tool would send for a validated input, without sending anything — the generated builder's requests (or the
 * hook's plan), with base URLs resolved for the account and credentials redacted. `base` lets the executor pass
 * its cached base URLs; it defaults to resolving them from the target.
 */
export function planRequests(
  tool: ToolDefinition,
  input: Record<string, unknown>,
  target: PlanTarget,
  base: (host?: string) => string = (host) => resolveBaseUrl(target.connector, target.connection, target.fields, host),
): PlannedRequest[] {
  const planned = tool.build(input, { base });
  const shown = tool.hook?.plan ? tool.hook.plan(input, planned, base) : planned;
  const secrets = secretValuesOf(tool, input);
  return shown.map((r) => describeRequest(target, r, secrets));
}
