// Copied by `npm run generate` from core/api/scopes.ts into the client package. Do not edit by hand.
/**
 * What an API credential may do. Every route of the route table (core/api/endpoints.ts) and every Scalekit gRPC
 * method (runtime/scalekit/grpc.ts) names the one scope it needs; a credential holds a set of them (or all, `*`),
 * and its service tokens carry that set.
 */
export const SCOPES = [
  'tools:execute',
  'proxy',
  'accounts:read',
  'accounts:write',
  'links:create',
  'connections:read',
  'connections:write',
  'credentials:admin',
  'webhooks:admin',
  'mcp:admin',
  'triggers:admin',
  'audit:read',
] as const;

export type Scope = (typeof SCOPES)[number];

/** What each scope allows, in a sentence (the OpenAPI document, the dashboard, the docs). */
export const SCOPE_DESCRIPTIONS: Readonly<Record<Scope, string>> = {
  'tools:execute': 'List, search and execute tools (also through an MCP server for server-side agents)',
  proxy: "Send raw requests to a provider's API through /proxy",
  'accounts:read': 'Read connected accounts (never their credentials)',
  'accounts:write': 'Create, upsert (store credentials), disconnect and delete connected accounts',
  'links:create': 'Create authorization links and verify the user who completed one',
  'connections:read': 'Read connections and the connector catalogue',
  'connections:write': 'Create, change and delete connections, including where their traffic goes',
  'credentials:admin': 'Create, list and revoke API credentials (granting at most the scopes held)',
  'webhooks:admin': 'Manage webhook endpoints and their deliveries',
  'mcp:admin': 'Manage MCP server configurations and their per-user URLs',
  'triggers:admin': 'Create, list, pause, resume and delete trigger instances',
  'audit:read': 'Read and export the audit log',
};

/** Every scope, present and future: what the first credential (and any created before scopes existed) holds. */
export const ALL_SCOPES = '*';

export function isScope(s: string): s is Scope {
  return (SCOPES as readonly string[]).includes(s);
}
