import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkProxyPath, proxyPathProblem } from '../../runtime/proxy/proxy.ts';

/**
 * The proxy's path check has a shortcut for plain paths (unreserved characters, no dot segments), which nearly every
 * call sends: it must answer exactly as the whole check does, for any path, plain or not.
 */
describe('checkProxyPath', () => {
  // Everything the checks look at: separators, dots, percent-encoding (of dots, slashes and backslashes), ";", "@",
  // ":", a backslash, whitespace and control characters, and plain letters, digits and unreserved marks.
  const pieces = fc.constantFrom(
    '/',
    '//',
    '.',
    '..',
    '...',
    '%',
    '%2e',
    '%2E',
    '%2f',
    '%5c',
    '%25',
    '%252e',
    '%41',
    '%zz',
    ';',
    ';x',
    '@',
    ':',
    '://',
    'http:',
    '\\',
    ' ',
    '\t',
    '\u0000',
    '\u007f',
    '\n',
    'a',
    'v2',
    'tickets',
    '123',
    '_',
    '-',
    '~',
    'é',
  );
  const paths = fc.array(pieces, { maxLength: 12 }).map((p) => p.join(''));

  it('answers as the whole check does, for any path', () => {
    fc.assert(
      fc.property(paths, (path) => {
        expect(checkProxyPath(path)).toBe(proxyPathProblem(path));
      }),
      { numRuns: 20_000 },
    );
  });

  it('takes plain paths and refuses the rest as before', () => {
    for (const ok of ['/', '/v2/tickets/123', '/a//b', '/a/.../b', '/a/.b/c', '/v1.0/x~y_z-1', '/..a/b'])
      expect(checkProxyPath(ok)).toBeUndefined();
    expect(checkProxyPath('//evil.example/x')).toBe('must not start with // (a host change)');
    expect(checkProxyPath('/v2/../admin')).toBe('must not contain . or .. segments (raw or percent-encoded)');
    expect(checkProxyPath('/v2/.')).toBe('must not contain . or .. segments (raw or percent-encoded)');
    expect(checkProxyPath('/user@host/x')).toBe('must not contain @ in its first segment');
    expect(checkProxyPath('v2/x')).toBe('must start with /');
    expect(checkProxyPath('/v2/%2e%2e/x')).toBe('must not contain . or .. segments (raw or percent-encoded)');
  });
});
