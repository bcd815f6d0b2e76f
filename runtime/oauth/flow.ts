import { createHash } from 'node:crypto';
import { accountEvent, updateAccountWithEvent } from '../webhooks/events.ts';
import * as oauth from 'oauth4webapi';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import type { Sealer } from '../crypto/sealer.ts';
import { aad } from '../crypto/aad.ts';
import { pendingAccount, type Account, type Connection, type Store } from '../store/types.ts';
import { newSortableId, randomSecret } from '../ids.ts';
import { authFor, getConnector, isOAuthKind } from '../connectors/catalog.ts';
import { ServiceError } from '../../core/errors.ts';
import type { AccountService } from '../accounts/service.ts';
import { endpointsFor, redirectUriFor, registrationWriter, type OAuthEndpoints } from './endpoints.ts';
import { authorizationUrl, exchangeCode, TokenRequestError } from './tokens.ts';
import { grantedFrom, unionScopes } from '../connect/scopes.ts';

export interface LinkOptions {
  /** The provider scopes the link asks for; absent: the connection's. */
  scopes?: string[] | null;
  /** Hand out an unexpired unused link made with the same options for this account rather than a new one. */
  reuse?: boolean;
  /**
   * false: an end user with no account yet gets none now; the link reserves the account's id and the account is
   * created when the link is completed (just in time: a caller that may only run tools creates no account rows).
   */
  persist?: boolean;
  /**
   * The end user's account on this connection, when the caller has just read it (with `persist: false` it is then
   * not looked up again). It must be the connection's account for the identifier given.
   */
  account?: Account;
}

const STATE_TTL_MS = 10 * 60_000;

const linkUsed = () =>
  new ServiceError(
    410,
    'link_used',
    'This link was already used: an authorization has completed through it, or a newer link replaced it. Ask the application for a new link.',
  );
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export interface CallbackOutcome {
  ok: boolean;
  account?: Account;
  connection?: Connection;
  /** Where to send the browser, if the client gave a return URL. */
  redirectTo?: string;
  message: string;
}

/**
 * The authorization-code flow: a link (opaque, expiring) that starts it; a redirect to the provider with
 * a single-use state and a PKCE S256 challenge whose verifier never leaves the server; and the callback
 * that exchanges the code, seals the tokens and activates the account.
 */
export class OAuthFlow {
  constructor(
    private store: Store,
    private sealer: Sealer,
    private accounts: AccountService,
    private config: Config,
    private log: Logger,
  ) {}

  /** Only the service's own origin and configured origins may receive users after authorization. */
  checkReturnUrl(url: string | undefined, field = 'redirect_url'): string | null {
    if (url === undefined || url === null || url === '') return null;
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw new ServiceError(400, 'invalid_input', `${field} must be an absolute URL`, [
        { field, message: 'must be an absolute http(s) URL' },
      ]);
    }
    const allowed = new Set([
      new URL(this.config.publicUrl).origin,
      ...this.config.allowedRedirectOrigins.map((o) => new URL(o).origin),
    ]);
    if ((u.protocol !== 'https:' && u.protocol !== 'http:') || !allowed.has(u.origin) || u.username || u.password) {
      throw new ServiceError(
        400,
        'invalid_input',
        `${field} origin ${u.origin} is not allowed (set ALLOWED_REDIRECT_ORIGINS)`,
        [{ field, message: `origin ${u.origin} is not an allowed redirect origin` }],
      );
    }
    return u.toString();
  }

  private deps() {
    return {
      sealer: this.sealer,
      publicUrl: this.config.publicUrl,
      upstreamAllowedHosts: this.config.upstreamAllowedHosts,
      updateRegistration: registrationWriter(this.store, (id) => this.accounts.invalidateConnection(id)),
    };
  }

  async endpoints(connection: Connection): Promise<OAuthEndpoints> {
    const connector = getConnector(connection.connector)!;
    return endpointsFor(connector, connection, this.deps());
  }

  async createLink(
    connection: Connection,
    identifier: string,
    redirectUrl?: string,
    userVerifyUrl?: string,
    opts: LinkOptions = {},
  ): Promise<{ link: string; expiresAt: number; accountId: string; account?: Account; reused?: boolean }> {
    const connector = getConnector(connection.connector)!;
    // A connection that takes keys or tokens gets a link too: it leads to the hosted connect page (runtime/connect/page.ts).
    const keyAuth = !isOAuthKind(connection.authKind);
    if (keyAuth && !('fields' in authFor(connector, connection.authKind))) {
      throw new ServiceError(400, 'not_oauth', `Connection "${connection.name}" takes no credentials a user can enter`);
    }
    if (connection.authKind === 'oauth2' && (!connection.clientId || !connection.clientSecretSealed)) {
      throw new ServiceError(
        409,
        'connection_incomplete',
        `Connection "${connection.name}" needs client_id and client_secret before authorization links work`,
      );
    }
    const returnTo = this.checkReturnUrl(redirectUrl);
    const verifyUrl = this.checkReturnUrl(userVerifyUrl, 'user_verify_url');
    const now = Date.now();
    const account =
      opts.persist === false
        ? (opts.account ?? (await this.store.findAccount(connection.id, identifier)))
        : (
            await this.store.transaction(async (tx) => {
              const r = await tx.getOrCreateAccount(
                pendingAccount(newSortableId('ca'), connection.id, identifier, now),
              );
              if (r.created) await tx.addWebhookEvent(accountEvent('connected_account.created', r.account, connection));
              return r;
            })
          ).account;
    const scopes = opts.scopes?.length && !keyAuth ? [...opts.scopes] : null;
    const linkUrl = (token: string) => `${this.config.publicUrl}/sso/v1/oauth/${connection.id}/authorize?link=${token}`;
    if (opts.reuse) {
      // A tool call repeated by an agent gets the link it got before while that link has at least half its life left:
      // a user who never connects costs one row per half link lifetime, however often the agent calls.
      const known = await this.store.findReusableOAuthLink({
        ...(account ? { accountId: account.id } : { connectionId: connection.id, identifier }),
        scopes,
        redirectUrl: returnTo,
        userVerifyUrl: verifyUrl,
        minExpiresAt: now + (this.config.linkTtlSeconds * 1000) / 2,
      });
      if (known?.tokenSealed) {
        const token = this.sealer.open(known.tokenSealed, aad.linkToken(known.tokenHash));
        return { link: linkUrl(token), expiresAt: known.expiresAt, accountId: known.accountId, account, reused: true };
      }
    }
    const token = randomSecret(32);
    const tokenHash = sha256(token);
    const expiresAt = now + this.config.linkTtlSeconds * 1000;
    const accountId = account?.id ?? newSortableId('ca');
    await this.store.createOAuthLink({
      tokenHash,
      connectionId: connection.id,
      accountId,
      identifier: account ? null : identifier,
      redirectUrl: returnTo,
      expiresAt,
      userVerifyUrl: verifyUrl,
      openedAt: null,
      usedAt: null,
      scopes,
      tokenSealed: this.sealer.seal(token, aad.linkToken(tokenHash)),
    });
    return { link: linkUrl(token), expiresAt, accountId, account };
  }

  /**
   * The account a link is for: the one it names or, for a link made before its account existed, the account of its
   * identifier — created now (with its `connected_account.created` event, under the id the link reserved) when
   * `create` is set, that is when the link is being completed.
   */
  async accountOfLink(
    link: { accountId: string; identifier?: string | null },
    connection: Connection,
    create: boolean,
  ): Promise<Account | undefined> {
    const named = await this.store.getAccount(link.accountId);
    if (named || !link.identifier) return named;
    const found = await this.store.findAccount(connection.id, link.identifier);
    if (found || !create) return found;
    const identifier = link.identifier;
    return (
      await this.store.transaction(async (tx) => {
        const r = await tx.getOrCreateAccount(pendingAccount(link.accountId, connection.id, identifier, Date.now()));
        if (r.created) await tx.addWebhookEvent(accountEvent('connected_account.created', r.account, connection));
        return r;
      })
    ).account;
  }

  /**
   * Opening a link: a fresh state and PKCE verifier, then the provider's authorization URL. A link may be
   * opened again until a flow completes through it (a user who went back), but not once it is spent.
   */
  async start(connectionId: string, linkToken: string): Promise<string> {
    const linkHash = sha256(linkToken);
    const link = linkToken ? await this.store.getOAuthLink(linkHash, Date.now()) : undefined;
    if (!link || link.connectionId !== connectionId) {
      throw new ServiceError(
        400,
        'invalid_link',
        'This authorization link is invalid or has expired; ask for a new one',
      );
    }
    if (link.usedAt != null) throw linkUsed();
    const connection = await this.store.getConnection(connectionId);
    if (!connection) throw new ServiceError(400, 'invalid_link', 'The connection of this link no longer exists');
    const ep = await this.endpoints(connection);
    const state = oauth.generateRandomState();
    const verifier = oauth.generateRandomCodeVerifier();
    const stateHash = sha256(state);
    await this.store.markOAuthLinkOpened(linkHash, Date.now());
    await this.store.createOAuthState({
      stateHash,
      connectionId,
      accountId: link.accountId,
      verifierSealed: this.sealer.seal(verifier, aad.stateVerifier(stateHash)),
      redirectUrl: link.redirectUrl,
      expiresAt: Date.now() + STATE_TTL_MS,
      usedAt: null,
      linkHash,
    });
    const challenge = ep.pkce ? await oauth.calculatePKCECodeChallenge(verifier) : undefined;
    // A link made for a set of tools (or for the scopes a tool lacks) asks for exactly its scopes.
    const asked = link.scopes?.length ? { ...ep, scopes: link.scopes } : ep;
    return authorizationUrl(asked, redirectUriFor(this.config.publicUrl, connectionId), state, challenge);
  }

  /** The provider's redirect back. The state is consumed atomically: a replay or forgery finds nothing. */
  async callback(connectionId: string, params: URLSearchParams): Promise<CallbackOutcome> {
    const state = params.get('state') ?? '';
    const stateHash = sha256(state);
    const stored = state ? await this.store.consumeOAuthState(stateHash, Date.now()) : undefined;
    if (!stored || stored.connectionId !== connectionId) {
      throw new ServiceError(
        400,
        'invalid_state',
        'The authorization state is unknown, expired, already used, or belongs to another connection; start again from a new link',
      );
    }
    const connection = await this.store.getConnection(connectionId);
    // A link made before its account existed names the identifier; the account is created below, once authorized.
    const linkRow = stored.linkHash ? await this.store.getOAuthLink(stored.linkHash, 0) : undefined;
    const reserved = { accountId: stored.accountId, identifier: linkRow?.identifier };
    let account = connection ? await this.accountOfLink(reserved, connection, false) : undefined;
    const identifier = account?.identifier ?? reserved.identifier;
    if (!connection || !identifier)
      throw new ServiceError(400, 'invalid_state', 'The connection or account of this authorization no longer exists');
    const redirect = (ok: boolean, extra: Record<string, string>) => {
      if (!stored.redirectUrl) return undefined;
      const u = new URL(stored.redirectUrl);
      u.searchParams.set('status', ok ? 'success' : 'error');
      u.searchParams.set('connected_account_id', account?.id ?? stored.accountId);
      u.searchParams.set('identifier', identifier);
      for (const [k, v] of Object.entries(extra)) u.searchParams.set(k, v);
      return u.toString();
    };

    const providerError = params.get('error');
    if (providerError) {
      const description = params.get('error_description') ?? '';
      const message = `The provider reported ${providerError}${description ? `: ${description}` : ''}`;
      if (account) await this.store.updateAccount(account.id, { lastError: message.slice(0, 500) }, Date.now());
      return { ok: false, account, connection, message, redirectTo: redirect(false, { error: providerError }) };
    }
    const code = params.get('code');
    if (!code) throw new ServiceError(400, 'invalid_callback', 'The callback carries neither a code nor an error');

    const ep = await this.endpoints(connection);
    const verifier = this.sealer.open(stored.verifierSealed, aad.stateVerifier(stateHash));
    let tokens;
    try {
      tokens = await exchangeCode(
        ep,
        params,
        redirectUriFor(this.config.publicUrl, connectionId),
        ep.pkce ? verifier : undefined,
      );
    } catch (e) {
      const message =
        e instanceof TokenRequestError
          ? `The provider refused the authorization code (${e.message})`
          : `The code exchange failed: ${(e as Error).message}`;
      if (account) await this.store.updateAccount(account.id, { lastError: message.slice(0, 500) }, Date.now());
      this.log.warn(
        { account: account?.id ?? stored.accountId, connection: connection.name },
        'authorization code exchange failed',
      );
      return {
        ok: false,
        account,
        connection,
        message,
        redirectTo: redirect(false, { error: 'token_exchange_failed' }),
      };
    }
    // One completion per link: whoever completes second (a replay, or a second tab) finds the link spent and
    // writes nothing, so the first account's tokens are never replaced through the same link.
    const link = stored.linkHash ? await this.store.consumeOAuthLink(stored.linkHash, Date.now()) : undefined;
    if (stored.linkHash && !link) throw linkUsed();
    account ??= (await this.accountOfLink(reserved, connection, true))!;
    const verifyUrl = link?.userVerifyUrl ?? null;
    const secrets: Record<string, string> = { access_token: tokens.access_token };
    if (tokens.refresh_token) secrets.refresh_token = tokens.refresh_token;
    if (tokens.token_type) secrets.token_type = tokens.token_type;
    if (tokens.scope) secrets.scope = tokens.scope;
    // The scopes granted: the token response's, else what the link asked for. Granting more to an account adds to
    // what it had (incremental consent); an account whose grant was never recorded is taken to have the new grant.
    const grantedScopes = unionScopes(
      account.secretsSealed ? account.grantedScopes : [],
      grantedFrom(tokens.scope, link?.scopes ?? ep.scopes, ep.scopeSeparator),
    );
    if (verifyUrl) {
      // The grant waits with the tokens; verifyUser gives it to the account.
      return this.awaitVerification(
        account,
        connection,
        verifyUrl,
        { ...secrets, scope: grantedScopes.join(' ') },
        tokens,
      );
    }
    const updated = await updateAccountWithEvent(
      this.store,
      account,
      connection,
      {
        status: 'ACTIVE',
        secretsSealed: this.accounts.sealSecrets(account.id, secrets),
        tokenExpiresAt: tokens.expiresAt,
        fields: { ...account.fields, ...tokens.fields },
        lastError: null,
        grantedScopes,
        // A connection with several kinds: OAuth is its first, which a NULL kind means (migration 019).
        ...(connection.authKinds ? { authKind: null } : {}),
      },
      { always: true, reason: 'authorized by the user' },
    );
    this.accounts.forgetAccount(account.id);
    this.log.info({ account: account.id, connection: connection.name }, 'account authorized');
    return {
      ok: true,
      account: updated,
      connection,
      message: `Connected. You can close this window and return to the application.`,
      redirectTo: redirect(true, {}),
    };
  }

  /**
   * An authorization through a link with a user_verify_url: its tokens wait, sealed, in the verification record,
   * and the account keeps its last good state until the application confirms the user. Whoever completes a
   * re-authorization link of someone else's working account therefore changes nothing it uses: an ACTIVE account
   * stays ACTIVE on its own tokens. Only an account that was never connected shows PENDING_VERIFICATION meanwhile.
   */
  async awaitVerification(
    account: Account,
    connection: Connection,
    verifyUrl: string,
    secrets: Record<string, string>,
    tokens: { expiresAt: number | null; fields: Record<string, string> },
  ): Promise<CallbackOutcome> {
    const authRequestId = randomSecret(32);
    const requestHash = sha256(authRequestId);
    const neverConnected = account.status === 'PENDING_AUTH' && !account.secretsSealed;
    const reason = 'authorized by the user; waiting for the application to verify the user';
    const shown = await this.store.transaction(async (tx) => {
      await tx.createAccountVerification({
        requestHash,
        accountId: account.id,
        expiresAt: Date.now() + this.config.linkTtlSeconds * 1000,
        usedAt: null,
        secretsSealed: this.sealer.seal(JSON.stringify(secrets), aad.verificationSecrets(requestHash)),
        tokenExpiresAt: tokens.expiresAt,
        fields: tokens.fields,
      });
      if (neverConnected) {
        return updateAccountWithEvent(
          tx,
          account,
          connection,
          { status: 'PENDING_VERIFICATION', lastError: null },
          { always: true, reason },
        );
      }
      await tx.addWebhookEvent(accountEvent('connected_account.verification_required', account, connection, reason));
      return account;
    });
    if (neverConnected) this.accounts.forgetAccount(account.id);
    this.log.info({ account: account.id, connection: connection.name }, 'account authorized; waiting for verification');
    const u = new URL(verifyUrl);
    u.searchParams.set('auth_request_id', authRequestId);
    return {
      ok: true,
      account: shown ?? account,
      connection,
      message: 'Authorized; the application now confirms that this account is yours.',
      redirectTo: u.toString(),
    };
  }

  /**
   * The client application confirms that its signed-in user is the account's identifier: the account takes the
   * tokens of that authorization and becomes ACTIVE. The request is single-use; an unknown, expired or spent one
   * is refused, and another identifier discards that authorization and leaves the account as it was.
   */
  async verifyUser(authRequestId: string, identifier: string): Promise<Account> {
    const now = Date.now();
    const requestHash = sha256(authRequestId);
    const pending = await this.store.consumeAccountVerification(requestHash, now);
    if (!pending) {
      throw new ServiceError(
        404,
        'verification_not_found',
        'No pending verification with this auth_request_id: it is unknown, expired or already used',
        [{ field: 'auth_request_id', message: 'unknown, expired or already used' }],
      );
    }
    const account = await this.store.getAccount(pending.accountId);
    const connection = account && (await this.store.getConnection(account.connectionId));
    if (!account || !connection || !pending.secretsSealed) {
      throw new ServiceError(
        409,
        'verification_not_pending',
        'The account of this verification no longer exists, or the authorization it waited for is gone',
      );
    }
    if (account.identifier !== identifier) {
      // The request is spent: a user who is not the identifier cannot retry with guesses. The account goes back
      // to what it was before this authorization (a never-connected account waits for a connection again).
      this.log.warn({ account: account.id }, 'user verification refused: identifier mismatch');
      await this.settleRefused(account, connection);
      throw new ServiceError(
        403,
        'identifier_mismatch',
        'The identifier does not match the account this authorization was started for; the authorization is discarded',
        [{ field: 'identifier', message: 'does not match the account being verified' }],
      );
    }
    const { $auth_kind: waitingKind, ...secrets } = JSON.parse(
      this.sealer.open(pending.secretsSealed, aad.verificationSecrets(requestHash)),
    ) as Record<string, string>;
    const updated = await updateAccountWithEvent(
      this.store,
      account,
      connection,
      {
        status: 'ACTIVE',
        secretsSealed: this.accounts.sealSecrets(account.id, secrets),
        tokenExpiresAt: pending.tokenExpiresAt ?? null,
        fields: { ...account.fields, ...(pending.fields ?? {}) },
        lastError: null,
        ...(secrets.scope ? { grantedScopes: grantedFrom(secrets.scope, []) } : {}),
        // A connection with several kinds: the kind the waiting credentials are of (the connect page seals it with
        // them as `$auth_kind`, a name no credential field can have); none: OAuth, the connection's first.
        ...(connection.authKinds ? { authKind: waitingKind ?? null } : {}),
      },
      { expectedVersion: account.version, always: true, reason: 'the user was verified' },
    );
    if (!updated) throw new ServiceError(409, 'verification_not_pending', 'The account changed during verification');
    this.accounts.forgetAccount(account.id);
    return updated;
  }

  /** A refused or expired verification: a never-connected account that shows PENDING_VERIFICATION waits again. */
  private async settleRefused(account: Account, connection: Connection): Promise<void> {
    if (account.status !== 'PENDING_VERIFICATION') return;
    const back = await updateAccountWithEvent(
      this.store,
      account,
      connection,
      { status: 'PENDING_AUTH' },
      { expectedVersion: account.version, reason: 'the user verification was refused or expired' },
    );
    if (back) this.accounts.forgetAccount(account.id);
  }

  /**
   * Accounts left PENDING_VERIFICATION by verifications that expired unused go back to PENDING_AUTH: at most
   * `limit` per call (the periodic upkeep calls it), each with its event.
   */
  async settleExpiredVerifications(now: number, limit = 100): Promise<number> {
    const ids = await this.store.listExpiredVerificationWaits(now - this.config.linkTtlSeconds * 1000, now, limit);
    for (const id of ids) {
      const account = await this.store.getAccount(id);
      const connection = account && (await this.store.getConnection(account.connectionId));
      if (account && connection) await this.settleRefused(account, connection);
    }
    return ids.length;
  }
}
