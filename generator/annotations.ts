/**
 * A tool's four MCP annotations, with the flags its YAML leaves out defaulted from the HTTP methods of its requests
 * where the method settles them (docs/adding-a-connector.md, "Annotations"):
 *
 * - every request a GET: read-only, not destructive, idempotent (RFC 9110 §9.2: GET is safe);
 * - any request a DELETE: not read-only, destructive;
 * - any other method: not read-only (the cautious claim: a POST that only searches says `readOnlyHint: true`);
 * - every method idempotent in HTTP (GET, PUT, DELETE; RFC 9110 §9.2.2): idempotent.
 *
 * What the methods do not settle must be declared: `openWorldHint` always (whether the tool reaches beyond the
 * user's own data is not a matter of method), `destructiveHint` for a tool that writes without deleting (a PUT
 * overwrites, a POST may only add), `idempotentHint` for a POST or PATCH, and every flag of a tool with a hook or
 * on an MCP transport (what it sends is not its declared requests' methods alone).
 */
import type { ToolSpec } from '../core/spec-model.ts';

export type Annotations = Required<NonNullable<ToolSpec['annotations']>>;
type Flag = keyof Annotations;

const IDEMPOTENT_METHODS = new Set(['GET', 'PUT', 'DELETE']);

/** What the methods settle, and why the others are not settled (for the error naming a missing flag). */
export function annotationDefaults(
  tool: Pick<ToolSpec, 'request' | 'requests' | 'hook'>,
  transport: 'rest' | 'mcp',
): { defaults: Partial<Annotations>; why: string } {
  const requests = tool.request ? [tool.request] : (tool.requests ?? []);
  if (tool.hook) return { defaults: {}, why: 'the tool has a hook, which may send more than its declared requests' };
  if (transport === 'mcp' || requests.some((r) => r.mcp_tool !== undefined))
    return { defaults: {}, why: 'the tool calls an MCP tool, whose effect no HTTP method tells' };
  const methods = [...new Set(requests.map((r) => (r.method ?? '').toUpperCase()))];
  if (!methods.length) return { defaults: {}, why: 'the tool sends no request' };
  const sends = `the tool sends ${methods.join(' and ')}`;
  if (methods.every((m) => m === 'GET')) {
    return { defaults: { readOnlyHint: true, destructiveHint: false, idempotentHint: true }, why: sends };
  }
  const defaults: Partial<Annotations> = { readOnlyHint: false };
  if (methods.includes('DELETE')) defaults.destructiveHint = true;
  if (methods.every((m) => IDEMPOTENT_METHODS.has(m))) defaults.idempotentHint = true;
  return { defaults, why: sends };
}

const MEANING: Record<Flag, string> = {
  readOnlyHint: 'true when it changes nothing at the provider',
  destructiveHint: 'true when it may delete or overwrite what exists, false when it only adds',
  idempotentHint: 'true when calling it again with the same input has no further effect',
  openWorldHint: "true when it reaches beyond the user's own account data (the open web, public profiles)",
};

/**
 * The four flags, declared or defaulted; `missing` gets each flag that must be declared and is not, with the
 * problem to report.
 */
export function resolveAnnotations(
  tool: Pick<ToolSpec, 'request' | 'requests' | 'hook' | 'annotations'>,
  transport: 'rest' | 'mcp',
  missing: (flag: Flag, problem: string) => void,
): Annotations {
  const { defaults, why } = annotationDefaults(tool, transport);
  const declared = tool.annotations ?? {};
  const out = {} as Annotations;
  for (const flag of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const) {
    const value = declared[flag] ?? defaults[flag];
    if (value === undefined) {
      missing(
        flag,
        flag === 'openWorldHint'
          ? `is required (${MEANING[flag]}): no HTTP method tells it`
          : `is required (${MEANING[flag]}): ${why}, which does not tell it`,
      );
    }
    out[flag] = value ?? false;
  }
  return out;
}
