/**
 * Many connected accounts, written through the store's bulk path (`insertAccounts`) with sealed credentials, as
 * the API would leave them after an upsert: for the scale tests and the scale bench (bench/scale.ts).
 */
import { randomBytes } from 'node:crypto';
import { aad } from '../../runtime/crypto/aad.ts';
import { parseKeyList } from '../../runtime/crypto/keys.ts';
import { Sealer } from '../../runtime/crypto/sealer.ts';
import { newId, newSortableId } from '../../runtime/ids.ts';
import type { Account, Connection, Store } from '../../runtime/store/types.ts';

/** A keyring of one fresh key, in the ENCRYPTION_KEYS form (so that a service started on it opens the same values). */
export function testKeys(kid = 'k1'): { encryptionKeys: string; sealer: Sealer } {
  const encryptionKeys = `${kid}:${randomBytes(32).toString('base64')}`;
  return { encryptionKeys, sealer: new Sealer(parseKeyList(encryptionKeys)) };
}

/** A bearer-token connection (the scraping platform's connector: one secret field). */
export function tokenConnection(name: string, apiBaseUrl: string | null = null): Connection {
  const now = Date.now();
  return {
    id: newId('conn'),
    name,
    connector: 'scraper',
    authKind: 'bearer',
    clientId: null,
    clientSecretSealed: null,
    scopes: [],
    apiBaseUrl,
    apiHosts: {},
    oauth: {},
    registrationSealed: null,
    createdAt: now,
    updatedAt: now,
  };
}

/**
 * An OAuth2 connection (the CRM connector: a bearer access token, a plain base URL) whose authorization and token
 * endpoints are `${oauthUrl}/authorize` and `${oauthUrl}/token`, with a client secret sealed as the API seals it.
 */
export function oauthConnection(name: string, apiBaseUrl: string, oauthUrl: string, sealer: Sealer): Connection {
  const c = tokenConnection(name, apiBaseUrl);
  return {
    ...c,
    connector: 'crm',
    authKind: 'oauth2',
    clientId: 'scale-client',
    clientSecretSealed: sealer.seal('scale-client-secret', aad.clientSecret(c.id)),
    oauth: { authorize_url: `${oauthUrl}/authorize`, token_url: `${oauthUrl}/token` },
  };
}

/**
 * Inserts `n` ACTIVE accounts `${prefix}${i}` on the connection, each with its own sealed token, in batches of
 * `batch` (one transaction each); `onBatch` reports progress. Returns their ids in order. `expired`: OAuth
 * accounts (an oauthConnection's), each with an access token that expired an hour ago and a refresh token
 * `rt-${i}-${id}`, as an authorization leaves them once the access token has run out.
 */
export async function seedAccounts(
  store: Store,
  sealer: Sealer,
  connectionId: string,
  n: number,
  opts: { prefix?: string; batch?: number; onBatch?: (done: number) => void; expired?: boolean } = {},
): Promise<string[]> {
  const { prefix = 'user-', batch = 5_000 } = opts;
  const ids: string[] = [];
  const base = Date.now();
  for (let start = 0; start < n; start += batch) {
    const rows: Account[] = [];
    for (let i = start; i < Math.min(n, start + batch); i++) {
      const id = newSortableId('ca');
      ids.push(id);
      rows.push({
        id,
        connectionId,
        identifier: `${prefix}${i}`,
        status: 'ACTIVE',
        fields: {},
        secretsSealed: sealer.seal(
          JSON.stringify(
            opts.expired
              ? { access_token: `at-${i}-${id}`, refresh_token: `rt-${i}-${id}`, token_type: 'Bearer' }
              : { token: `tok-${i}-${id}` },
          ),
          aad.accountSecrets(id),
        ),
        tokenExpiresAt: opts.expired ? base - 3_600_000 : null,
        lastUsedAt: null,
        lastError: null,
        version: 1,
        // Distinct, increasing creation times: pages in creation order are then the seeding order.
        createdAt: base + i,
        updatedAt: base + i,
      });
    }
    await store.insertAccounts(rows);
    opts.onBatch?.(Math.min(n, start + batch));
  }
  return ids;
}
