/**
 * SIGKILL during `keys rotate` (issue 12: "a kill during keys rotate"), on SQLite and on PostgreSQL. A store holds
 * many sealed values (connected accounts' secrets, a connection's client secret, the sealed meta keys) under one
 * key; `keys add` makes a new key active; then the real command `keys rotate` runs as its own process and is killed
 * with SIGKILL once it has re-sealed the first value, then 30 %, 60 % and 90 % of them (each run resumes where the
 * previous one was killed). After every kill, every sealed value must open (with the old or the new key) to exactly
 * the plaintext written, and the store must pass its integrity check. Finally a rotation runs to the end, `verify`
 * passes, and the old key can be removed (refused while any value still used it).
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PG_URL } from '../helpers/harness.ts';
import { openStore } from '../../runtime/store/index.ts';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import type { Store } from '../../runtime/store/types.ts';
import { keyFilePath, loadKeyring, readKeyFile } from '../../runtime/crypto/keys.ts';
import { Sealer } from '../../runtime/crypto/sealer.ts';
import { aad, aadForCell } from '../../runtime/crypto/aad.ts';
import { newId } from '../../runtime/ids.ts';
import { record } from './summary.ts';

const RECORDS = Number(process.env.ROTATE_CRASH_RECORDS) || 3000;
/** Kill once the rotation has re-sealed this share of the values (the first: one value). */
const KILL_AT = [1 / RECORDS, 0.3, 0.6, 0.9];

type Backend = 'sqlite' | 'postgres';

/** `node scripts/start.mjs runtime/cli/keys.js <args>` (what `npm run keys` runs), in this very process tree. */
const KEYS = ['scripts/start.mjs', 'runtime/cli/keys.js'];

function keys(env: Record<string, string>, ...args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...KEYS, ...args], { cwd: process.cwd(), env: childEnv(env) }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

const childEnv = (env: Record<string, string>) => ({ PATH: process.env.PATH, HOME: process.env.HOME, ...env });

describe.each<Backend>(['sqlite', 'postgres'])('SIGKILL during keys rotate (%s)', (backend) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'acs-rotate-crash-'));
  const schema = `rot_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    ...(backend === 'postgres' ? { DATABASE_URL: PG_URL, DATABASE_SCHEMA: schema } : {}),
  };
  /** Every sealed value written: `table.column id` → plaintext. */
  const written = new Map<string, string>();
  let oldKid: string;
  let newKid: string;

  const open = (): Store => openStore({ dataDir, databaseUrl: env.DATABASE_URL }, env.DATABASE_SCHEMA);
  const sealer = () => new Sealer(loadKeyring({ dataDir, mayCreate: false }).keyring);

  /** How many account secrets the new key seals now: read on a connection of the test's own, as often as it can. */
  let countNew: () => Promise<number>;
  let closeCounter: () => Promise<void>;

  beforeAll(async () => {
    const store = open();
    await store.migrate();
    const s = new Sealer(loadKeyring({ dataDir, mayCreate: true }).keyring);
    const now = Date.now();
    const connectionId = newId('conn');
    const clientSecret = `secret-${randomBytes(12).toString('hex')}`;
    await store.createConnection({
      id: connectionId,
      name: 'mail',
      connector: 'mail',
      authKind: 'oauth2',
      clientId: 'client-rotate',
      clientSecretSealed: s.seal(clientSecret, aad.clientSecret(connectionId)),
      scopes: [],
      apiBaseUrl: null,
      apiHosts: {},
      oauth: {},
      registrationSealed: null,
      createdAt: now,
      updatedAt: now,
    });
    written.set(`connections.client_secret_sealed ${connectionId}`, clientSecret);
    for (const key of ['service_token_key', 'dashboard_cookie_key']) {
      const value = randomBytes(32).toString('base64');
      await store.setMeta(key, s.seal(value, aad.meta(key)));
      written.set(`meta.value ${key}`, value);
    }
    for (let i = 0; i < RECORDS; i += 100) {
      await Promise.all(
        Array.from({ length: Math.min(100, RECORDS - i) }, async (_, k) => {
          const id = newId('ca');
          const secrets = JSON.stringify({ access_token: `at-${randomBytes(16).toString('hex')}`, n: i + k });
          await store.getOrCreateAccount({
            id,
            connectionId,
            identifier: `user-${i + k}`,
            status: 'ACTIVE',
            fields: {},
            secretsSealed: s.seal(secrets, aad.accountSecrets(id)),
            tokenExpiresAt: null,
            lastUsedAt: null,
            lastError: null,
            version: 1,
            createdAt: now,
            updatedAt: now,
          });
          written.set(`connected_accounts.secrets_sealed ${id}`, secrets);
        }),
      );
    }
    await store.close();
    oldKid = s.activeKid;

    // The real command makes the new key active (and builds dist/ first if it is stale, before any kill).
    const added = await keys(env, 'add');
    expect(added.out).toMatch(/added \S+ and made it active/);
    newKid = readKeyFile(keyFilePath(dataDir)).active;
    expect(newKid).not.toBe(oldKid);

    const like = `v1.${newKid}.%`;
    if (backend === 'postgres') {
      const counter = new PostgresStore(PG_URL, schema);
      countNew = async () =>
        Number(
          (
            await counter.pool.query<{ n: string }>(
              'SELECT count(*) AS n FROM connected_accounts WHERE secrets_sealed LIKE $1',
              [like],
            )
          ).rows[0]!.n,
        );
      closeCounter = () => counter.close();
    } else {
      const db = new Database(join(dataDir, 'acs.sqlite'), { readonly: true });
      const q = db.prepare<[string], { n: number }>(
        'SELECT count(*) AS n FROM connected_accounts WHERE secrets_sealed LIKE ?',
      );
      countNew = () => Promise.resolve(q.get(like)!.n);
      closeCounter = () => Promise.resolve(void db.close());
    }
  }, 300_000);

  afterAll(async () => {
    await closeCounter?.();
    rmSync(dataDir, { recursive: true, force: true });
    if (backend === 'postgres') {
      const cleanup = new PostgresStore(PG_URL);
      await cleanup.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
      await cleanup.close();
    }
  });

  /** Opens every sealed value with the key file's keys and compares it with what was written. */
  async function checkEverything(): Promise<{ problems: string[]; byKey: Record<string, number> }> {
    const store = open();
    const s = sealer();
    const problems: string[] = [];
    const byKey: Record<string, number> = {};
    try {
      problems.push(...(await store.integrityCheck()).map((p) => `integrity: ${p}`));
      const seen = new Set<string>();
      for (const cell of await store.listSealed(undefined, 10_000)) {
        const where = `${cell.table}.${cell.column} ${cell.id}`;
        seen.add(where);
        const kid = Sealer.kidOf(cell.value) ?? '?';
        byKey[kid] = (byKey[kid] ?? 0) + 1;
        try {
          if (s.open(cell.value, aadForCell(cell)) !== written.get(where)) problems.push(`${where}: another value`);
        } catch (e) {
          problems.push(`${where}: ${(e as Error).message}`);
        }
      }
      for (const where of written.keys()) if (!seen.has(where)) problems.push(`${where}: missing`);
      return { problems, byKey };
    } finally {
      await store.close();
    }
  }

  it(
    `every value opens after each kill, and a later rotation completes (${RECORDS} accounts)`,
    { timeout: 600_000 },
    async () => {
      const lines: string[] = [];
      let survived = 0;
      let midway = 0;
      const allProblems: string[] = [];
      for (const share of KILL_AT) {
        const target = Math.max(1, Math.floor(RECORDS * share));
        const proc = spawn(process.execPath, [...KEYS, 'rotate'], {
          cwd: process.cwd(),
          env: childEnv(env),
          stdio: 'ignore',
        });
        const exited = new Promise<string>((resolve) =>
          proc.once('exit', (code, signal) => resolve(signal ?? `exit ${code}`)),
        );
        let ended: string | undefined;
        void exited.then((how) => (ended = how));
        let atKill = 0;
        while (ended === undefined) {
          atKill = await countNew();
          if (atKill >= target) {
            proc.kill('SIGKILL');
            break;
          }
          // Let the child's exit event through (the SQLite count answers without a turn of the event loop).
          await new Promise((r) => setImmediate(r));
        }
        const how = await exited;
        const check = await checkEverything();
        const accountsNew = await countNew();
        // A kill counts only if it came mid-way: the process died by the signal with values left to re-seal.
        const killedMidway = how === 'SIGKILL' && accountsNew < RECORDS;
        if (killedMidway) midway++;
        if (!check.problems.length) survived++;
        allProblems.push(...check.problems.map((p) => `kill at ${target}: ${p}`));
        lines.push(
          `kill at ${target} of ${RECORDS}: ${how} after ${atKill} re-sealed (${accountsNew} after it died); by key ${JSON.stringify(check.byKey)}; ${check.problems.length} problems`,
        );
      }

      const finished = await keys(env, 'rotate');
      const [, done, total] = /rotated (\d+) of (\d+) sealed value\(s\)/.exec(finished.out) ?? [];
      const final = await checkEverything();
      const verified = await keys(env, 'verify');
      const removed = await keys(env, 'remove', oldKid);
      lines.push(`final rotate: ${finished.out.trim()}; verify: ${verified.out.trim()}; remove: ${removed.out.trim()}`);
      console.log(lines.join('\n'));
      record({
        category: 'crashes survived',
        what: `SIGKILL during keys rotate over ${written.size} sealed values (${backend}), then a full rotation`,
        tried: KILL_AT.length + 1,
        failed: KILL_AT.length - survived + (final.problems.length || finished.code ? 1 : 0),
        detail: `${midway} of ${KILL_AT.length} kills mid-way; the last rotation re-sealed ${done} of ${total}`,
      });
      expect(allProblems).toEqual([]);
      expect(midway).toBe(KILL_AT.length);
      expect(finished.code).toBe(0);
      expect(Number(total)).toBe(written.size);
      expect(final).toEqual({ problems: [], byKey: { [newKid]: written.size } });
      expect(verified).toMatchObject({ code: 0, out: expect.stringContaining(`${written.size} of ${written.size}`) });
      expect(removed).toMatchObject({ code: 0, out: expect.stringContaining(`removed ${oldKid}`) });
    },
  );
});
