/**
 * A registry of every secret a test created (provider access and refresh tokens, API keys, provider client
 * secrets, API client secrets, PKCE verifiers...), and scanners that look for any of them, in plain text, in
 * log lines, HTTP response bodies and headers, error messages and the raw bytes of store files. Derived forms
 * a credential travels in (the base64 of a Basic authorization) are registered beside the secret.
 */
import { existsSync, readFileSync } from 'node:fs';
import { record } from './summary.ts';

export interface Finding {
  kind: string;
  where: string;
  /** The start of the secret only, so the report itself does not spread it. */
  preview: string;
}

/** Secrets are matched by their first PREFIX characters, then compared in full. */
const PREFIX = 12;

export class SecretRegistry {
  private byPrefix = new Map<string, Array<{ value: string; kind: string }>>();
  private all = new Set<string>();
  /** How many haystacks (log lines, bodies, files) were scanned. */
  scanned = 0;

  get size(): number {
    return this.all.size;
  }

  add(kind: string, value: string | undefined | null): void {
    if (!value || this.all.has(value)) return;
    if (value.length < PREFIX)
      throw new Error(`a registered ${kind} must have at least ${PREFIX} characters to be found reliably`);
    this.all.add(value);
    const key = value.slice(0, PREFIX);
    const list = this.byPrefix.get(key) ?? [];
    list.push({ value, kind });
    this.byPrefix.set(key, list);
  }

  addAll(kind: string, values: Iterable<string | undefined | null>): void {
    for (const v of values) this.add(kind, v);
  }

  /** A Basic credential: the secret itself and the header value it becomes. */
  addBasic(kind: string, username: string, password: string): void {
    this.add(kind, password);
    this.add(`${kind} (Basic header)`, Buffer.from(`${username}:${password}`, 'utf8').toString('base64'));
  }

  has(value: string): boolean {
    return this.all.has(value);
  }

  /** Every registered secret found in `text` (latin1 for raw file bytes). */
  findIn(text: string, where: string): Finding[] {
    this.scanned++;
    const out: Finding[] = [];
    const seen = new Set<string>();
    for (let i = 0; i + PREFIX <= text.length; i++) {
      const candidates = this.byPrefix.get(text.substr(i, PREFIX));
      if (!candidates) continue;
      for (const c of candidates) {
        if (!seen.has(c.value) && text.startsWith(c.value, i)) {
          seen.add(c.value);
          out.push({ kind: c.kind, where, preview: `${c.value.slice(0, 6)}…` });
        }
      }
    }
    return out;
  }

  findInTexts(texts: Iterable<string>, where: string): Finding[] {
    const out: Finding[] = [];
    let i = 0;
    for (const t of texts) out.push(...this.findIn(t, `${where} #${i++}`));
    return out;
  }

  /** The raw bytes of files (a SQLite database with its -wal and -shm), as they are on disk. */
  findInFiles(paths: string[]): Finding[] {
    const out: Finding[] = [];
    for (const p of paths) {
      if (!existsSync(p)) continue;
      out.push(...this.findIn(readFileSync(p).toString('latin1'), p));
    }
    return out;
  }
}

export function sqliteFiles(dbPath: string): string[] {
  return [dbPath, `${dbPath}-wal`, `${dbPath}-shm`];
}

/**
 * A fetch that keeps every response the service sent (status line, headers and body) for scanning. Bodies are
 * read from a clone, so callers use the response as usual.
 */
export function recordingFetch(into: string[], inner: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const res = await inner(input, init);
    // The request's own query (an authorization code on a callback, say) is not part of the response.
    const url = (typeof input === 'string' ? input : input instanceof URL ? input.href : input.url).split('?')[0];
    const head = `${res.status} ${url}\n${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}`;
    if (res.body) {
      const copy = res.clone();
      into.push(`${head}\n\n${await copy.text()}`);
    } else into.push(head);
    return res;
  };
}

/** Records the scan under 'secrets scanned' and returns the findings for the test to assert on. */
export function recordScan(what: string, registry: SecretRegistry, findings: Finding[], haystacks: number): Finding[] {
  record({
    category: 'secrets scanned',
    what,
    tried: registry.size,
    failed: new Set(findings.map((f) => f.preview)).size,
    detail: `${haystacks} log lines, bodies and files searched${
      findings.length
        ? `; found: ${findings
            .slice(0, 5)
            .map((f) => `${f.kind} in ${f.where}`)
            .join('; ')}`
        : ''
    }`,
  });
  return findings;
}
