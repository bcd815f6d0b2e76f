import type { SealedCell } from '../store/types.ts';

/** Associated data for each sealed column: binds a ciphertext to its record and purpose. */
export const aad = {
  accountSecrets: (accountId: string) => `account:${accountId}:secrets`,
  clientSecret: (connectionId: string) => `connection:${connectionId}:client_secret`,
  registration: (connectionId: string) => `connection:${connectionId}:registration`,
  stateVerifier: (stateHash: string) => `oauth_state:${stateHash}:verifier`,
  meta: (key: string) => `meta:${key}`,
  webhookSecret: (endpointId: string) => `webhook_endpoint:${endpointId}:secret`,
  verificationSecrets: (requestHash: string) => `account_verification:${requestHash}:secrets`,
  linkToken: (tokenHash: string) => `oauth_link:${tokenHash}:token`,
  triggerSecret: (instanceId: string) => `trigger_instance:${instanceId}:secret`,
  mcpOidcClientSecret: (serverId: string) => `mcp_oauth_settings:${serverId}:oidc_client_secret`,
};

export function aadForCell(cell: Pick<SealedCell, 'table' | 'column' | 'id'>): string {
  switch (`${cell.table}.${cell.column}`) {
    case 'connected_accounts.secrets_sealed':
      return aad.accountSecrets(cell.id);
    case 'connections.client_secret_sealed':
      return aad.clientSecret(cell.id);
    case 'connections.registration_sealed':
      return aad.registration(cell.id);
    case 'oauth_states.verifier_sealed':
      return aad.stateVerifier(cell.id);
    case 'meta.value':
      return aad.meta(cell.id);
    case 'webhook_endpoints.secret_sealed':
      return aad.webhookSecret(cell.id);
    case 'oauth_links.token_sealed':
      return aad.linkToken(cell.id);
    case 'mcp_oauth_settings.oidc_client_secret_sealed':
      return aad.mcpOidcClientSecret(cell.id);
    case 'account_verifications.secrets_sealed':
      return aad.verificationSecrets(cell.id);
    case 'trigger_instances.secret_sealed':
      return aad.triggerSecret(cell.id);
    default:
      throw new Error(`no associated data defined for ${cell.table}.${cell.column}`);
  }
}
