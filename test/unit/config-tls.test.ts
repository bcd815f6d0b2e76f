/**
 * TLS_CERT_FILE and TLS_KEY_FILE: both or neither, each file read and checked at start, and every mistake a
 * ConfigError naming the variable — through `npm start` one line on stderr and exit code 1.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../runtime/config.ts';
import { createTestCa, type TestCa } from '../helpers/test-ca.ts';

let ca: TestCa;
beforeAll(() => {
  ca = createTestCa();
});
afterAll(() => ca?.remove());

function refusal(env: Record<string, string>): ConfigError {
  try {
    loadConfig({ PORT: '8080', ...env });
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error('loadConfig accepted it');
}

describe('TLS configuration', () => {
  it('serves plain HTTP without either variable, HTTPS with both', () => {
    const plain = loadConfig({ PORT: '8080' });
    expect(plain.tls).toBeUndefined();
    expect(plain.publicUrl).toBe('http://localhost:8080');
    const secure = loadConfig({ PORT: '8443', TLS_CERT_FILE: ca.certFile, TLS_KEY_FILE: ca.keyFile });
    expect(secure.tls?.cert.toString()).toContain('BEGIN CERTIFICATE');
    expect(secure.tls?.key.toString()).toContain('PRIVATE KEY');
    expect(secure.publicUrl).toBe('https://localhost:8443');
    // PUBLIC_URL, when given, is the operator's (a proxy or load balancer in front may change the scheme).
    expect(
      loadConfig({ TLS_CERT_FILE: ca.certFile, TLS_KEY_FILE: ca.keyFile, PUBLIC_URL: 'https://acs.example.com' })
        .publicUrl,
    ).toBe('https://acs.example.com');
  });

  it('refuses one variable without the other, naming the missing one', () => {
    const noKey = refusal({ TLS_CERT_FILE: ca.certFile });
    expect(noKey.variable).toBe('TLS_KEY_FILE');
    expect(noKey.message).toBe(
      'TLS_KEY_FILE is not set but TLS_CERT_FILE is: set both to serve HTTPS, or neither to serve plain HTTP',
    );
    expect(refusal({ TLS_KEY_FILE: ca.keyFile }).variable).toBe('TLS_CERT_FILE');
  });

  it('refuses a file that cannot be read, naming the variable and the path', () => {
    const missing = join(ca.dir, 'nowhere.pem');
    const e = refusal({ TLS_CERT_FILE: missing, TLS_KEY_FILE: ca.keyFile });
    expect(e.message).toBe(`TLS_CERT_FILE names a file that cannot be read: ${missing} (ENOENT)`);
    expect(refusal({ TLS_CERT_FILE: ca.certFile, TLS_KEY_FILE: ca.dir }).message).toBe(
      `TLS_KEY_FILE names a file that cannot be read: ${ca.dir} (EISDIR)`,
    );
  });

  it('refuses files that are not a certificate and a private key, or a key of another certificate', () => {
    const garbage = join(ca.dir, 'garbage.pem');
    writeFileSync(garbage, 'not a PEM file\n');
    expect(refusal({ TLS_CERT_FILE: garbage, TLS_KEY_FILE: ca.keyFile }).message).toBe(
      `TLS_CERT_FILE is not a PEM certificate: ${garbage}`,
    );
    // The two files swapped.
    expect(refusal({ TLS_CERT_FILE: ca.keyFile, TLS_KEY_FILE: ca.certFile }).variable).toBe('TLS_CERT_FILE');
    expect(refusal({ TLS_CERT_FILE: ca.certFile, TLS_KEY_FILE: ca.certFile }).message).toBe(
      `TLS_KEY_FILE is not an unencrypted PEM private key: ${ca.certFile}`,
    );
    // The CA's key is a valid key, but not the server certificate's.
    const otherKey = join(ca.dir, 'ca.key');
    expect(refusal({ TLS_CERT_FILE: ca.certFile, TLS_KEY_FILE: otherKey }).message).toBe(
      `TLS_KEY_FILE holds a private key that does not belong to the certificate in TLS_CERT_FILE (${otherKey}, ${ca.certFile})`,
    );
  });

  it('stops `npm start` with one line naming the variable, and exit code 1', async () => {
    const proc = spawn(process.execPath, ['--import', 'tsx', 'runtime/main.ts'], {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DATA_DIR: ca.dir,
        LOG_LEVEL: 'silent',
        TLS_CERT_FILE: ca.certFile,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((r) => proc.once('exit', r));
    expect(code).toBe(1);
    expect(out).toBe('');
    expect(err.trim()).toBe(
      'agent connector service cannot start: TLS_KEY_FILE is not set but TLS_CERT_FILE is: set both to serve HTTPS, or neither to serve plain HTTP',
    );
  });
});
