/**
 * Authorization just in time: a call that needs the end user to connect (a missing account, one waiting for its
 * first authorization, an expired or disconnected one, one that lacks a tool's scopes) answers
 * `authorization_required` with a link for that connection and identifier, rather than an error the agent cannot
 * act on. The one place that makes that error: the REST routes, the proxy and both MCP eras call it (docs/connect.md).
 */
import { AuthorizationRequiredError, ServiceError, type AuthorizationRequiredInfo } from '../../core/errors.ts';
import type { ToolDefinition } from '../../core/tool-types.ts';
import { authFor, getConnector } from '../connectors/catalog.ts';
import type { OAuthFlow } from '../oauth/flow.ts';
import type { Account, Connection } from '../store/types.ts';
import { baseScopes, scopesForTools, unionScopes } from './scopes.ts';

/** Where the user goes after connecting, and whether the application confirms the user (as for any link). */
export interface AuthorizationContext {
  redirectUrl?: string;
  userVerifyUrl?: string;
}

type Reason = AuthorizationRequiredInfo['reason'];

/** The account errors an end user fixes by connecting, and the reason each becomes. */
const REASON_OF: Record<string, Reason> = {
  account_not_found: 'not_connected',
  account_not_authorized: 'pending_auth',
  account_expired: 'expired',
  account_disconnected: 'disconnected',
};

export function reasonOf(err: unknown): Reason | undefined {
  return err instanceof ServiceError && !(err instanceof AuthorizationRequiredError) ? REASON_OF[err.code] : undefined;
}

const WHY: Record<Reason, (title: string) => string> = {
  not_connected: (t) => `The user has not connected a ${t} account yet.`,
  pending_auth: (t) => `The user's ${t} account is waiting for its first authorization.`,
  expired: (t) => `The user's ${t} account needs to be connected again (its authorization expired).`,
  disconnected: (t) => `The user's ${t} account was disconnected.`,
  missing_scopes: (t) => `The user's ${t} account has not granted what this tool needs.`,
};

export class JustInTime {
  constructor(private oauth: OAuthFlow) {}

  /**
   * The `authorization_required` error for a call on `connection` for `identifier`, with a link (the same unexpired
   * link again when one was made for the same account and scopes); undefined when no link can be made for this
   * connection (the caller then answers the error it had).
   */
  async required(p: {
    connection: Connection;
    identifier: string;
    reason: Reason;
    account?: Account;
    tool?: ToolDefinition;
    missingScopes?: string[];
    context?: AuthorizationContext;
  }): Promise<AuthorizationRequiredError | undefined> {
    const connector = getConnector(p.connection.connector);
    if (!connector) return undefined;
    const auth = authFor(connector, p.connection.authKind);
    const granted = p.account?.secretsSealed ? p.account.grantedScopes : null;
    let scopes: string[] | null = null;
    if (p.reason === 'missing_scopes') {
      scopes = unionScopes(baseScopes(auth), granted, p.missingScopes);
    } else if (p.tool?.scopes?.length) {
      // Least privilege: the tool's scopes (and what the account had, when it is being reconnected).
      scopes = granted
        ? unionScopes(baseScopes(auth), granted, p.tool.scopes)
        : scopesForTools(connector.name, auth, [p.tool.name]);
    }
    let made;
    try {
      made = await this.oauth.createLink(p.connection, p.identifier, p.context?.redirectUrl, p.context?.userVerifyUrl, {
        scopes,
        reuse: true,
        // A user with no account gets none until the link is completed: a caller that may only run tools creates
        // no account rows (the error names the id the account will have).
        persist: false,
        // The caller's account is this connection's for this identifier: not read again.
        ...(p.account && p.account.connectionId === p.connection.id && p.account.identifier === p.identifier
          ? { account: p.account }
          : {}),
      });
    } catch (e) {
      if (e instanceof ServiceError && e.status < 500) return undefined;
      throw e;
    }
    const missing = p.missingScopes?.length ? ` It lacks: ${p.missingScopes.join(', ')}.` : '';
    return new AuthorizationRequiredError(
      `${WHY[p.reason](connector.title)}${missing} Send the user to the link (error.link) to connect it, then retry the call.`,
      {
        link: made.link,
        linkExpiresAt: made.expiresAt,
        connectionName: p.connection.name,
        identifier: p.identifier,
        connectedAccountId: made.accountId,
        reason: p.reason,
        ...(p.missingScopes?.length ? { missingScopes: p.missingScopes } : {}),
      },
    );
  }
}
