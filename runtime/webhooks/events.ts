/**
 * Account lifecycle events (issue 15 point 5): the event written to the store's outbox in the same transaction as
 * the change it reports. The body follows the Standard Webhooks shape `{type, timestamp, data}`; `data` names the
 * account (id, connection, connector, identifier, status) and why it changed — never a credential.
 */
import type { WEBHOOK_EVENT_TYPES } from '../../core/api/schemas.ts';
import { newSortableId } from '../ids.ts';
import type { Account, AccountPatch, Connection, Store, StoreTransaction, WebhookEvent } from '../store/types.ts';

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export function accountEvent(
  type: WebhookEventType,
  account: Account,
  connection: Pick<Connection, 'name' | 'connector'>,
  reason: string | null = account.lastError,
  at = Date.now(),
): WebhookEvent {
  const payload = JSON.stringify({
    type,
    timestamp: new Date(at).toISOString(),
    data: {
      connected_account_id: account.id,
      connection_name: connection.name,
      connector: connection.connector,
      identifier: account.identifier,
      status: type === 'connected_account.deleted' ? 'DELETED' : account.status,
      reason,
    },
  });
  return { id: newSortableId('msg'), type, payload, createdAt: at };
}

/** The event a status reached by an update reports, if any. */
export function eventForStatus(status: Account['status']): WebhookEventType | undefined {
  switch (status) {
    case 'ACTIVE':
      return 'connected_account.active';
    case 'EXPIRED':
      return 'connected_account.expired';
    case 'DISCONNECTED':
      return 'connected_account.disconnected';
    case 'PENDING_VERIFICATION':
      return 'connected_account.verification_required';
    default:
      return undefined;
  }
}

/**
 * Updates the account as `store.updateAccount` does and, when the update lands and changes its status (or `always`),
 * adds the event reporting it, in one transaction: a crash keeps both or neither.
 */
export async function updateAccountWithEvent(
  store: Store | StoreTransaction,
  account: Account,
  connection: Pick<Connection, 'name' | 'connector'>,
  patch: AccountPatch,
  opts: { expectedVersion?: number; always?: boolean; reason?: string | null } = {},
): Promise<Account | undefined> {
  const run = async (tx: StoreTransaction) => {
    const updated = await tx.updateAccount(account.id, patch, Date.now(), opts.expectedVersion);
    if (!updated) return undefined;
    const type = eventForStatus(updated.status);
    if (type && (opts.always || updated.status !== account.status)) {
      await tx.addWebhookEvent(accountEvent(type, updated, connection, opts.reason ?? updated.lastError));
    }
    return updated;
  };
  return 'transaction' in store ? store.transaction(run) : run(store);
}
