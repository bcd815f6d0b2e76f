/**
 * `npm run keys -- <command>`: manage the encryption keys that seal credentials at rest.
 *
 *   list             key ids, which one is active, and how many sealed values each key holds
 *   add              create a new key and make it active (key file only; with ENCRYPTION_KEYS, prints one to add)
 *   rotate           re-encrypt every sealed value with the active key
 *   remove <kid>     delete a key from the key file, refused while any value still uses it
 *   verify           decrypt every sealed value and report failures
 *   verify-audit     check the audit log's hash chain; fails when an entry was altered or removed
 *   rotate-signing [--revoke-old]
 *                    replace the key that signs the service's own bearer tokens; tokens signed with the old key keep
 *                    working until they expire (TOKEN_TTL_SECONDS), or stop at once with --revoke-old. Running
 *                    instances pick the new key up through the store's change feed, without a restart.
 *
 * Uses the same configuration as the service (DATA_DIR, DATABASE_URL, ENCRYPTION_KEYS, TOKEN_TTL_SECONDS).
 * Rotation procedure: add → (restart the service so it seals with the new key) → rotate → verify → remove <old>.
 */
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../config.ts';
import { openStore } from '../store/index.ts';
import { keyFilePath, loadKeyring, newKeyId, readKeyFile, writeKeyFile } from '../crypto/keys.ts';
import { Sealer } from '../crypto/sealer.ts';
import { rotateSealed, verifySealed } from '../crypto/rotate.ts';
import { rotateSigningKey } from '../auth/signing-keys.ts';
import { verifyAudit } from '../audit/log.ts';

const [command, arg, ...extra] = process.argv.slice(2);
const config = loadConfig();
const path = keyFilePath(config.dataDir);

async function withStore<T>(fn: (store: ReturnType<typeof openStore>, sealer: Sealer) => Promise<T>): Promise<T> {
  const store = openStore(config);
  await store.migrate();
  try {
    const { keyring } = loadKeyring({
      dataDir: config.dataDir,
      encryptionKeys: config.encryptionKeys,
      mayCreate: false,
    });
    return await fn(store, new Sealer(keyring));
  } finally {
    await store.close();
  }
}

function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

switch (command) {
  case 'list': {
    await withStore(async (store, sealer) => {
      const report = await verifySealed(store, sealer);
      const { keyring } = loadKeyring({
        dataDir: config.dataDir,
        encryptionKeys: config.encryptionKeys,
        mayCreate: false,
      });
      for (const kid of keyring.keys.keys()) {
        console.log(`${kid}${kid === keyring.activeKid ? ' (active)' : ''}: ${report.byKey[kid] ?? 0} sealed value(s)`);
      }
      for (const [kid, n] of Object.entries(report.byKey))
        if (!keyring.keys.has(kid)) console.log(`${kid} (MISSING): ${n} sealed value(s)`);
    });
    break;
  }
  case 'add': {
    const key = randomBytes(32).toString('base64');
    const kid = newKeyId();
    if (config.encryptionKeys) {
      console.log(
        `ENCRYPTION_KEYS is set, so keys live in the environment. Put this key first:\nENCRYPTION_KEYS=${kid}:${key},${config.encryptionKeys}`,
      );
      break;
    }
    if (!existsSync(path)) fail(`${path} does not exist; start the service once to create it`);
    const file = readKeyFile(path);
    file.keys[kid] = key;
    file.active = kid;
    writeKeyFile(path, file);
    console.log(`added ${kid} and made it active; restart the service, then run: npm run keys -- rotate`);
    break;
  }
  case 'rotate': {
    const report = await withStore((store, sealer) => rotateSealed(store, sealer));
    console.log(
      `rotated ${report.rotated} of ${report.total} sealed value(s); ${report.alreadyCurrent} already used the active key`,
    );
    for (const f of report.failed) console.error(`  failed: ${f.where}: ${f.error}`);
    if (report.failed.length) process.exit(1);
    break;
  }
  case 'remove': {
    if (!arg) fail('usage: npm run keys -- remove <kid>');
    if (config.encryptionKeys) fail('ENCRYPTION_KEYS is set: remove the key from that variable instead');
    const file = readKeyFile(path);
    if (!file.keys[arg]) fail(`no key ${arg} in ${path}`);
    if (file.active === arg) fail(`${arg} is the active key; add a new key first`);
    const inUse = await withStore(async (store, sealer) => (await verifySealed(store, sealer)).byKey[arg] ?? 0);
    if (inUse) fail(`${inUse} sealed value(s) still use ${arg}; run: npm run keys -- rotate`);
    delete file.keys[arg];
    writeKeyFile(path, file);
    console.log(`removed ${arg}`);
    break;
  }
  case 'verify': {
    const report = await withStore((store, sealer) => verifySealed(store, sealer));
    console.log(`${report.total - report.failed.length} of ${report.total} sealed value(s) decrypt`);
    for (const f of report.failed) console.error(`  failed: ${f.where}: ${f.error}`);
    if (report.failed.length) process.exit(1);
    break;
  }
  case 'verify-audit': {
    // The audit log's hash chain, from its anchor (entries removed by retention) to its head: an entry altered or
    // removed fails it. Needs the store only, not the keys.
    const store = openStore(config);
    await store.migrate();
    try {
      const report = await verifyAudit(store);
      if (report.ok)
        console.log(
          `the audit log verifies: ${report.checked} entr${report.checked === 1 ? 'y' : 'ies'} chained from the anchor (entry ${report.head.anchorSeq}) to the head (entry ${report.head.seq})`,
        );
      else {
        console.error(`the audit log does NOT verify (${report.checked} entries read):`);
        for (const p of report.problems) console.error(`  ${p}`);
        process.exitCode = 1;
      }
    } finally {
      await store.close();
    }
    break;
  }
  case 'rotate-signing': {
    if ((arg !== undefined && arg !== '--revoke-old') || extra.length)
      fail(`rotate-signing takes one option, --revoke-old; got: ${[arg, ...extra].join(' ')}`);
    const revokeOld = arg === '--revoke-old';
    const now = Date.now();
    const r = await withStore((store, sealer) =>
      rotateSigningKey(store, sealer, { now, maxTokenLifetimeMs: config.tokenTtlSeconds * 1000, revokeOld }),
    );
    console.log(`token-signing key ${r.active} is active; running instances use it for the next token they issue`);
    for (const k of r.kept)
      console.log(`  ${k.kid}: tokens it signed keep working until ${new Date(k.retireAt).toISOString()}`);
    if (r.dropped.length)
      console.log(
        `  ${r.dropped.join(', ')}: ${revokeOld ? 'revoked: tokens it signed are refused from now on' : 'retired'}`,
      );
    break;
  }
  default:
    fail(
      'usage: npm run keys -- list | add | rotate | remove <kid> | verify | verify-audit | rotate-signing [--revoke-old]',
    );
}
