import { spawnSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Options } from 'got';
import { describe, expect, it } from 'vitest';
import { gotNativeRequestOptions, upstreamClient } from '../../runtime/upstream/got-client.ts';
import { mergeHeaders } from '../../core/request-headers.ts';

const CACHE_KEYS = ['shared', 'cacheHeuristic', 'immutableMinTimeToLive', 'ignoreCargoCult'];
const URL_ = 'https://api.example.com/v2/tickets/1?include=users';

/** A per-request Options object, as got builds one from the service's instance. */
const requestOptions = (extra: Record<string, unknown> = {}) =>
  new Options(
    URL_,
    { method: 'POST', headers: { accept: 'application/json' }, body: '{}', ...extra },
    upstreamClient.defaults.options,
  );

describe('per-request objects that keep one hidden class (runtime/upstream/got-client.ts, core/request-headers.ts)', () => {
  it('are what got builds, but for the cache options, which only its cache layer reads, and the unset ones', () => {
    const options = requestOptions();
    const ours = options.createNativeRequestOptions() as Record<string, unknown>;
    const gots = gotNativeRequestOptions.call(options) as Record<string, unknown>;
    for (const key of CACHE_KEYS) {
      expect(gots).toHaveProperty(key);
      expect(ours).not.toHaveProperty(key);
    }
    const set = Object.fromEntries(Object.entries(gots).filter(([k, v]) => !CACHE_KEYS.includes(k) && v !== undefined));
    expect(Object.keys(gots).length).toBeGreaterThan(Object.keys(set).length + CACHE_KEYS.length);
    expect(ours).toStrictEqual(set);
    expect(Object.values(ours)).not.toContain(undefined);
    expect(ours.method).toBe('POST');
    expect(ours.agent).toBe((upstreamClient.defaults.options.agent as { https: unknown }).https);
  });

  it("leave the request's cache options as they were, and are got's own when a cache is used", () => {
    const options = requestOptions({ cacheOptions: { shared: false } });
    options.createNativeRequestOptions();
    expect(options.cacheOptions.shared).toBe(false);

    const cached = requestOptions({ cache: new Map(), cacheOptions: { shared: false } });
    const ours = cached.createNativeRequestOptions() as Record<string, unknown>;
    expect(ours.shared).toBe(false);
    expect(ours).toStrictEqual(gotNativeRequestOptions.call(cached));
  });

  it('keep one hidden class from call to call, as do merged headers (checked with V8 natives syntax in a child process)', () => {
    // `%HaveSameMap` needs --allow-natives-syntax, which a test runner's own process does not have.
    const script = `
      const { Options } = await import('got');
      const { upstreamClient, gotNativeRequestOptions } = await import(${JSON.stringify(fileURLToPath(new URL('../../runtime/upstream/got-client.ts', import.meta.url)))});
      const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)');
      const build = (i) => new Options('https://api.example.com/v2/tickets/' + i, { headers: { accept: 'application/json' } }, upstreamClient.defaults.options);
      const a = build(1), b = build(2);
      // Each warmed up as on a running service (the first few calls share a map either way), got's own first:
      // the two share one function, and ours never passes it anything but the empty cache options.
      const check = (f) => { for (let i = 0; i < 5000; i++) f(a); return sameMap(f(a), f(b)); };
      const gots = check((o) => gotNativeRequestOptions.call(o));
      const ours = check((o) => o.createNativeRequestOptions());
      // An upstream request's headers with its credentials merged in (core/request-headers.ts), and the spread
      // that mergeHeaders replaces.
      const { mergeHeaders } = await import(${JSON.stringify(fileURLToPath(new URL('../../core/request-headers.ts', import.meta.url)))});
      const own = () => ({ accept: 'application/json', 'user-agent': 'x' });
      const credentials = { authorization: 'Bearer t' };
      const twice = (f) => { for (let i = 0; i < 5000; i++) f(); return sameMap(f(), f()); };
      const merged = twice(() => mergeHeaders(own(), credentials));
      const spread = twice(() => ({ ...own(), ...credentials }));
      console.log(JSON.stringify({ ours, gots, merged, spread }));`;
    const run = spawnSync(
      process.execPath,
      ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '-e', script],
      {
        cwd: fileURLToPath(new URL('../..', import.meta.url)),
        encoding: 'utf8',
      },
    );
    expect(run.stderr).toBe('');
    const result = JSON.parse(run.stdout) as { ours: boolean; gots: boolean; merged: boolean; spread: boolean };
    expect(result.ours).toBe(true);
    expect(result.merged).toBe(true);
    // What the change is for: on this Node, got's own literal gets a new hidden class each time. (A later Node may
    // fix that; then this line, not the service, is what needs changing.)
    expect(result.gots).toBe(false);
    expect(result.spread).toBe(false);
  });

  it("keep got's per-request copy of the headers on one hidden class, with a body and without (natives syntax, child process)", () => {
    // got copies each request's headers and adds accept-encoding (and a body's content-length) to the copy unless
    // they are there; PreparedClient puts them there first, so that the copy is never given a key (got-client.ts).
    const script = `
      import http from 'node:http';
      const { clientFor } = await import(${JSON.stringify(fileURLToPath(new URL('../../runtime/upstream/got-client.ts', import.meta.url)))});
      const server = http.createServer((req, res) => { req.resume(); req.on('end', () => res.end('{}')); });
      await new Promise((r) => server.listen(0, '127.0.0.1', r));
      const url = 'http://127.0.0.1:' + server.address().port + '/x';
      const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)');
      const client = clientFor(5000, 5000, false, true);
      // The headers of got's request once it has gone out and been answered.
      const send = (body) => new Promise((resolve, reject) => {
        const headers = { accept: 'application/json', authorization: 'Bearer t' };
        const s = client.stream(url, body === undefined ? { method: 'GET', headers } : { method: 'POST', headers, body });
        s.on('error', reject);
        s.on('end', () => resolve(s.options.headers));
        s.resume();
      });
      const check = async (body) => {
        for (let i = 0; i < 2000; i++) await send(body);
        return sameMap(await send(body), await send(body));
      };
      const get = await check(undefined);
      const post = await check('{"a":1}');
      server.close();
      console.log(JSON.stringify({ get, post }));`;
    const run = spawnSync(
      process.execPath,
      ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '-e', script],
      { cwd: fileURLToPath(new URL('../..', import.meta.url)), encoding: 'utf8' },
    );
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ get: true, post: true });
  });

  it('merged headers: the second set wins, and every name is an own property, __proto__ included', () => {
    const own = JSON.parse('{"accept":"application/json","__proto__":"x","authorization":"client"}') as Record<
      string,
      string
    >;
    const merged = mergeHeaders(own, { authorization: 'Bearer t', 'x-api-key': 'k' });
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(Object.entries(merged)).toEqual([
      ['accept', 'application/json'],
      ['__proto__', 'x'],
      ['authorization', 'Bearer t'],
      ['x-api-key', 'k'],
    ]);
    const credentials = JSON.parse('{"__proto__":"y"}') as Record<string, string>;
    expect(Object.hasOwn(mergeHeaders({}, credentials), '__proto__')).toBe(true);
    expect(own.authorization).toBe('client');
  });

  it('still make the request: method, path, query and headers reach the provider', async () => {
    const seen: Array<{ method?: string; url?: string; accept?: string }> = [];
    const server = http.createServer((req, res) => {
      seen.push({ method: req.method, url: req.url, accept: req.headers.accept });
      res.end('{"ok":true}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      const res = await upstreamClient(`http://127.0.0.1:${port}/v2/tickets/1?include=users`, {
        method: 'GET',
        headers: { accept: 'application/json' },
      });
      expect(res.statusCode).toBe(200);
      expect(res.rawBody.toString()).toBe('{"ok":true}');
      expect(seen).toEqual([{ method: 'GET', url: '/v2/tickets/1?include=users', accept: 'application/json' }]);
    } finally {
      server.close();
    }
  });
});
