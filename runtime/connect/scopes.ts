/**
 * Least privilege per tool: the provider scopes a tool declares in its YAML, the scopes a link asks for, and the
 * scopes an account lacks for a tool (docs/connect.md).
 */
import type { AuthSpec } from '../../core/spec-model.ts';
import type { ToolDefinition } from '../../core/tool-types.ts';
import type { Account } from '../store/types.ts';
import { ServiceError } from '../../core/errors.ts';
import { getTool } from '../connectors/catalog.ts';

/** The scopes every authorization of this auth asks for (a refresh token, the profile), whatever the tools. */
export function baseScopes(auth: AuthSpec): string[] {
  return auth.kind === 'oauth2' ? [...(auth.scopes.base ?? [])] : [];
}

/** The union, first appearance first. */
export function unionScopes(...lists: ReadonlyArray<readonly string[] | null | undefined>): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const list of lists)
    for (const s of list ?? []) {
      if (!seen.has(s.toLowerCase())) {
        seen.add(s.toLowerCase());
        out.push(s);
      }
    }
  return out;
}

/**
 * Whether a granted scope covers a needed one: the same name (providers compare scope names without regard to case
 * in practice), the provider's long form of it (Microsoft answers `https://graph.microsoft.com/Mail.Read` for
 * `Mail.Read`), or a broader scope that `includes` it (the auth's `scopes.available`).
 */
function covers(granted: string, needed: string, auth: AuthSpec): boolean {
  const same = (a: string, b: string) => {
    const x = a.toLowerCase();
    const y = b.toLowerCase();
    return x === y || x.endsWith(`/${y}`);
  };
  if (same(granted, needed)) return true;
  if (auth.kind !== 'oauth2') return false;
  const offered = auth.scopes.available?.find((a) => same(granted, a.name));
  return !!offered?.includes?.some((i) => same(i, needed));
}

/** The scopes `tool` needs that the account was not granted; none when the account's grant is not recorded. */
export function missingScopes(
  account: Pick<Account, 'grantedScopes'>,
  tool: Pick<ToolDefinition, 'scopes'>,
  auth: AuthSpec,
): string[] {
  if (!account.grantedScopes || !tool.scopes?.length) return [];
  const granted = account.grantedScopes;
  return tool.scopes.filter((n) => !granted.some((g) => covers(g, n, auth)));
}

/** What the provider granted: the token response's `scope`, else what was asked for. */
export function grantedFrom(scope: string | undefined, asked: readonly string[], separator = ' '): string[] {
  const said = scope?.split(separator === ' ' ? /\s+/ : separator).filter(Boolean);
  return unionScopes(said?.length ? said : asked);
}

/**
 * The scopes a link made for `toolNames` asks for: the auth's base scopes and the tools' own. Every name must be a
 * tool of `connector`; a set whose tools declare no scopes asks for the connection's scopes (null), as a link
 * without tools does.
 */
export function scopesForTools(connector: string, auth: AuthSpec, toolNames: readonly string[]): string[] | null {
  const tools: ToolDefinition[] = [];
  toolNames.forEach((name, i) => {
    const tool = getTool(name);
    if (!tool || tool.connector !== connector) {
      throw new ServiceError(
        400,
        'invalid_input',
        `tools[${i}]: "${name}" is not a tool of the ${connector} connector`,
        [{ field: `tools[${i}]`, message: `is not a tool of the ${connector} connector` }],
      );
    }
    tools.push(tool);
  });
  if (auth.kind !== 'oauth2') return null;
  const own = unionScopes(...tools.map((t) => t.scopes));
  return own.length ? unionScopes(baseScopes(auth), own) : null;
}
