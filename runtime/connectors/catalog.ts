import { isIP } from 'node:net';
import { connectors, tools } from '../../generated/registry.ts';
import type {
  AccountFieldSpec,
  AuthSpec,
  CredentialApply,
  KeyAuthSpec,
  OAuth2AuthSpec,
  OAuth2McpAuthSpec,
} from '../../core/spec-model.ts';
import type { ConnectorDefinition, FieldError, ToolDefinition } from '../../core/tool-types.ts';
import type { Connection } from '../store/types.ts';
import { ServiceError } from '../../core/errors.ts';
import { hostAndPort, listedHost } from '../upstream/address-guard.ts';

export { connectors, tools };

export function getConnector(name: string): ConnectorDefinition | undefined {
  return connectors.get(name);
}

export function getTool(name: string): ToolDefinition | undefined {
  return tools.get(name);
}

export function authFor(connector: ConnectorDefinition, kind: string): AuthSpec {
  const auth = connector.auth.find((a) => a.kind === kind);
  if (!auth) throw new ServiceError(500, 'internal_error', `connector ${connector.name} has no auth kind ${kind}`);
  return auth;
}

export const isOAuthKind = (kind: string): boolean => kind === 'oauth2' || kind === 'oauth2_mcp';

/** The auth kinds a connection's users may connect with: its `auth_kinds`, else its one `auth_kind` (issue 38). */
export const authKindsOf = (connection: { authKind: string; authKinds?: string[] }): string[] =>
  connection.authKinds?.length ? connection.authKinds : [connection.authKind];

/** The auth kind an account's credentials are of: the one it was connected with, else its connection's. */
export const accountAuthKind = (connection: { authKind: string }, account?: { authKind?: string | null }): string =>
  account?.authKind ?? connection.authKind;
export const isKeyAuth = (a: AuthSpec): a is KeyAuthSpec =>
  a.kind === 'api_key' || a.kind === 'bearer' || a.kind === 'basic';
export const isOAuth2 = (a: AuthSpec): a is OAuth2AuthSpec => a.kind === 'oauth2';
export const isMcpAuth = (a: AuthSpec): a is OAuth2McpAuthSpec => a.kind === 'oauth2_mcp';

/** Fills `{name}` placeholders from the given values; a missing value is an error naming it. */
export function fill(template: string, values: Record<string, string | undefined>, what: string): string {
  return template.replace(/\{([a-z_][a-z0-9_]*)\}/gi, (_m, name: string) => {
    const v = values[name];
    if (v === undefined || v === '') {
      throw new ServiceError(409, 'account_incomplete', `The connected account has no "${name}", needed for ${what}`, [
        { field: name, message: `is missing, and is needed for ${what}` },
      ]);
    }
    return v;
  });
}

const headerNamesOf = new WeakMap<CredentialApply, readonly string[]>();

/**
 * Lower-case names of the headers a connector's credentials occupy; clients may not set them. Computed once per
 * way of applying credentials (every tool call asks).
 */
export function credentialHeaderNames(apply: CredentialApply): readonly string[] {
  let names = headerNamesOf.get(apply);
  if (!names) {
    const list: string[] = [];
    if (apply.bearer !== undefined || apply.basic !== undefined) list.push('authorization');
    for (const h of Object.keys(apply.headers ?? {})) list.push(h.toLowerCase());
    names = Object.freeze(list);
    headerNamesOf.set(apply, names);
  }
  return names;
}

/** The headers that carry the credentials (core/request-headers.ts shows them redacted). */
export function credentialHeaders(
  apply: CredentialApply,
  values: Record<string, string | undefined>,
): Record<string, string> {
  const v = (t: string) => fill(t, values, 'the credential header');
  const out: Record<string, string> = {};
  if (apply.bearer !== undefined) out.authorization = `Bearer ${v(apply.bearer)}`;
  if (apply.basic !== undefined) {
    out.authorization = `Basic ${Buffer.from(`${v(apply.basic.username)}:${v(apply.basic.password)}`, 'utf8').toString('base64')}`;
  }
  for (const [name, t] of Object.entries(apply.headers ?? {})) out[name.toLowerCase()] = v(t);
  return out;
}

/** `*.zendesk.com` matches `acme.zendesk.com` (one or more labels), never `zendesk.com` itself or lookalikes. */
export function hostAllowed(host: string, allowlist: readonly string[]): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return allowlist.some((pattern) => {
    const p = pattern.toLowerCase();
    if (p.startsWith('*.')) {
      const suffix = p.slice(1);
      return (
        h.endsWith(suffix) &&
        h.length > suffix.length &&
        /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(h.slice(0, -suffix.length))
      );
    }
    return h === p;
  });
}

const HOSTNAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/i;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function checkField(spec: AccountFieldSpec, raw: unknown): string | undefined {
  if (typeof raw !== 'string') return 'must be a string';
  const value = raw.trim();
  if (!value) return 'must not be empty';
  if (value.length > 4096) return 'is too long';
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(value)) return 'must not contain control characters';
  if (spec.format === 'email' && !EMAIL.test(value)) return 'must be an email address';
  if (spec.format === 'url') {
    let u: URL;
    try {
      u = new URL(value);
    } catch {
      return 'must be a URL';
    }
    if (u.protocol !== 'https:') return 'must be an https URL';
    if (u.username || u.password) return 'must not contain credentials';
    if (spec.host_allowlist && !hostAllowed(u.hostname, spec.host_allowlist))
      return `must be a URL on ${spec.host_allowlist.join(' or ')}`;
    return undefined;
  }
  if (spec.format === 'hostname') {
    if (/^[a-z]+:\/\//i.test(value) || value.includes('/'))
      return 'must be a bare domain such as acme.zendesk.com, without scheme or path';
    if (isIP(value.replace(/^\[|\]$/g, ''))) return 'must be a domain name, not an IP address';
    if (!HOSTNAME.test(value)) return 'must be a domain name such as acme.zendesk.com';
  }
  if (spec.host_allowlist && !hostAllowed(value, spec.host_allowlist)) {
    return `must be a host under ${spec.host_allowlist.join(' or ')}`;
  }
  if (spec.pattern && !new RegExp(spec.pattern).test(value)) return `must match ${spec.pattern}`;
  return undefined;
}

/**
 * Validates a credentials object against the account fields a key-type connector declares. Returns the
 * non-secret fields and the secret ones separately, or every problem found.
 */
export function validateCredentials(
  auth: KeyAuthSpec,
  credentials: unknown,
): { fields: Record<string, string>; secrets: Record<string, string> } | { errors: FieldError[] } {
  if (!credentials || typeof credentials !== 'object' || Array.isArray(credentials)) {
    return {
      errors: [
        { field: 'credentials', message: `must be an object with ${auth.fields.map((f) => f.name).join(', ')}` },
      ],
    };
  }
  const given = credentials as Record<string, unknown>;
  const errors: FieldError[] = [];
  const fields: Record<string, string> = {};
  const secrets: Record<string, string> = {};
  const known = new Set(auth.fields.map((f) => f.name));
  for (const key of Object.keys(given)) {
    if (!known.has(key))
      errors.push({
        field: `credentials.${key}`,
        message: `is not a credential field of this connector (expected ${[...known].join(', ')})`,
      });
  }
  for (const spec of auth.fields) {
    const raw = given[spec.name] ?? spec.default;
    if (raw === undefined || raw === null || raw === '') {
      if (spec.required !== false) errors.push({ field: `credentials.${spec.name}`, message: 'is required' });
      continue;
    }
    const problem = checkField(spec, raw);
    if (problem) errors.push({ field: `credentials.${spec.name}`, message: problem });
    else (spec.secret ? secrets : fields)[spec.name] = (raw as string).trim();
  }
  return errors.length ? { errors } : { fields, secrets };
}

/**
 * An MCP connector's endpoint is its OAuth protected resource, and tokens are issued for that resource alone:
 * a connection that overrides the resource moves the endpoint with it (unless it also sets `api_base_url`).
 */
function mcpResourceOverride(
  connector: ConnectorDefinition,
  connection: Pick<Connection, 'authKind'> & { oauth?: Connection['oauth'] },
): string | null {
  const resource = connection.oauth?.resource;
  if (connection.authKind !== 'oauth2_mcp' || !resource) return null;
  const auth = connector.auth.find(isMcpAuth);
  return auth && auth.resource === connector.api.base_url ? resource : null;
}

/** The account fields, of any auth kind of the connector, that come with a host allowlist. */
export function allowlistedFields(connector: ConnectorDefinition): AccountFieldSpec[] {
  return connector.auth.filter(isKeyAuth).flatMap((a) => a.fields.filter((f) => f.host_allowlist));
}

/**
 * The base URL for a host of a connector, for one account: the connection's override when set, else the
 * connector's own; `{field}` placeholders come from the account's non-secret fields. A templated host is
 * re-checked against the field's allowlist (and a URL field must be https), so a stored value can never point
 * the service elsewhere — whichever auth kind filled it: OAuth accounts get such fields from the provider's
 * token response (callintel's per-customer API host), trusted as they are only when the operator pointed the
 * connection at its own token endpoint.
 */
export function resolveBaseUrl(
  connector: ConnectorDefinition,
  connection: Pick<Connection, 'apiBaseUrl' | 'apiHosts' | 'authKind'> & { oauth?: Connection['oauth'] },
  fields: Record<string, string>,
  host?: string,
): string {
  const override = host
    ? connection.apiHosts[host]
    : (connection.apiBaseUrl ?? mcpResourceOverride(connector, connection));
  const template = override ?? (host ? connector.api.hosts?.[host] : connector.api.base_url);
  if (!template) throw new ServiceError(500, 'internal_error', `connector ${connector.name} has no host ${host}`);
  const operatorTokenServer = isOAuthKind(connection.authKind) && !!connection.oauth?.token_url;
  if (!override && !operatorTokenServer) {
    for (const f of allowlistedFields(connector)) {
      if (!template.includes(`{${f.name}}`)) continue;
      const raw = fields[f.name];
      let v = raw;
      if (raw !== undefined && f.format === 'url') {
        try {
          const u = new URL(raw);
          v = u.protocol === 'https:' && !u.username && !u.password ? u.hostname : '';
        } catch {
          v = '';
        }
      }
      if (v !== undefined && !hostAllowed(v, f.host_allowlist!)) {
        throw new ServiceError(
          400,
          'host_not_allowed',
          `The account's ${f.name} "${raw}" is not ${f.format === 'url' ? 'an https URL ' : ''}under ${f.host_allowlist!.join(', ')}`,
        );
      }
    }
  }
  return fill(template, fields, 'the API base URL').replace(/\/+$/, '');
}

/** `host:port` of a URL template, or undefined when a placeholder (an account field) fills its authority. */
function fixedHost(template: string | null | undefined): string | undefined {
  if (!template) return undefined;
  const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(template)?.[1];
  if (authority === undefined || authority.includes('{')) return undefined;
  try {
    return hostAndPort(new URL(template.replace(/\{[a-z_][a-z0-9_]*\}/gi, 'x')));
  } catch {
    return undefined;
  }
}

/**
 * The hosts (`host:port`) the connector itself configured, and those of the connection's overrides that the operator
 * lists in UPSTREAM_ALLOWED_HOSTS (`allowedHosts`). These, and their subdomains on the same port (Standby Actors
 * answer at `<actorId>.<standby host>`), may resolve to any address; every other host — an override the operator
 * did not list, one an account field names, a provider's redirect — must be public (see upstream/address-guard):
 * a caller who may change a connection cannot point its traffic, and the credentials it carries, into the
 * service's own network.
 */
export function configuredHosts(
  connector: ConnectorDefinition,
  connection: Pick<Connection, 'apiBaseUrl' | 'apiHosts' | 'authKind'> & { oauth?: Connection['oauth'] },
  fields: Record<string, string>,
  allowedHosts: readonly string[],
): string[] {
  const own = [connector.api.base_url, ...Object.values(connector.api.hosts ?? {})].map(fixedHost);
  const overrides = [connection.apiBaseUrl, ...Object.values(connection.apiHosts ?? {}), connection.oauth?.resource];
  // What the operator's own token server answered is as trusted as that server (see resolveBaseUrl).
  if (isOAuthKind(connection.authKind) && connection.oauth?.token_url) {
    for (const f of allowlistedFields(connector))
      if (fields[f.name]) overrides.push(f.format === 'url' ? fields[f.name] : `https://${fields[f.name]}`);
  }
  const hosts = [...own, ...overrides.filter((u) => listedOverride(u, allowedHosts)).map(fixedHost)];
  return [...new Set(hosts.filter((h): h is string => !!h))];
}

/** Whether an override URL's host is one the operator listed (UPSTREAM_ALLOWED_HOSTS). */
export function listedOverride(url: string | null | undefined, allowedHosts: readonly string[]): boolean {
  if (!url || !allowedHosts.length) return false;
  try {
    return listedHost(new URL(url.replace(/\{[a-z_][a-z0-9_]*\}/gi, 'x')), allowedHosts);
  } catch {
    return false;
  }
}
