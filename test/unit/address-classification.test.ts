/**
 * The public-address check of the upstream guard (issue 12, point 7), table-driven: one or more addresses in
 * every range of the IANA IPv4 and IPv6 special-purpose address registries, every IPv6 form that carries an
 * IPv4 address, and public addresses that must pass.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { hostAndPort, isConfiguredHost, isPublicAddress, normalizeHost } from '../../runtime/upstream/address-guard.ts';
import { record, tallied, type Tally } from '../reliability/summary.ts';

/** [range, registry entry, addresses in it] — none of them public. */
const NOT_PUBLIC: Array<[string, string, string[]]> = [
  // IANA IPv4 Special-Purpose Address Registry
  ['0.0.0.0/8', '"This network"', ['0.0.0.0', '0.1.2.3']],
  ['10.0.0.0/8', 'Private-Use', ['10.0.0.1', '10.255.255.255']],
  ['100.64.0.0/10', 'Shared Address Space', ['100.64.0.1', '100.127.255.254']],
  ['127.0.0.0/8', 'Loopback', ['127.0.0.1', '127.1.2.3']],
  ['169.254.0.0/16', 'Link Local', ['169.254.169.254', '169.254.0.1']],
  ['172.16.0.0/12', 'Private-Use', ['172.16.0.1', '172.31.255.254']],
  ['192.0.0.0/24', 'IETF Protocol Assignments', ['192.0.0.1', '192.0.0.8', '192.0.0.170']],
  ['192.0.2.0/24', 'Documentation (TEST-NET-1)', ['192.0.2.1']],
  ['192.88.99.0/24', 'Deprecated 6to4 Relay Anycast', ['192.88.99.1']],
  ['192.168.0.0/16', 'Private-Use', ['192.168.1.1']],
  ['198.18.0.0/15', 'Benchmarking', ['198.18.0.1', '198.19.255.254']],
  ['198.51.100.0/24', 'Documentation (TEST-NET-2)', ['198.51.100.7']],
  ['203.0.113.0/24', 'Documentation (TEST-NET-3)', ['203.0.113.9']],
  ['224.0.0.0/4', 'Multicast', ['224.0.0.1', '239.255.255.250']],
  ['240.0.0.0/4', 'Reserved', ['240.0.0.1', '250.1.2.3']],
  ['255.255.255.255/32', 'Limited Broadcast', ['255.255.255.255']],
  // IANA IPv6 Special-Purpose Address Registry
  ['::1/128', 'Loopback Address', ['::1', '0:0:0:0:0:0:0:1']],
  ['::/128', 'Unspecified Address', ['::']],
  [
    '::ffff:0:0/96',
    'IPv4-mapped Address (private IPv4 inside)',
    ['::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:169.254.169.254'],
  ],
  [
    '::ffff:0:0:0/96',
    'IPv4-translated (RFC 6145, private IPv4 inside)',
    ['::ffff:0:7f00:1', '::ffff:0:127.0.0.1', '::ffff:0:a00:1'],
  ],
  ['::/96', 'IPv4-compatible (deprecated)', ['::127.0.0.1', '::7f00:1', '::10.0.0.1', '::8.8.8.8']],
  [
    '64:ff9b::/96',
    'IPv4-IPv6 Translat. (private IPv4 inside)',
    ['64:ff9b::127.0.0.1', '64:ff9b::a9fe:a9fe', '64:ff9b::10.1.2.3'],
  ],
  ['64:ff9b:1::/48', 'IPv4-IPv6 Translat. (local use)', ['64:ff9b:1::1', '64:ff9b:1::808:808']],
  ['100::/64', 'Discard-Only Address Block', ['100::1']],
  ['100:0:0:1::/64', 'Dummy IPv6 Prefix', ['100:0:0:1::1']],
  ['2001::/23', 'IETF Protocol Assignments', ['2001:1::1', '2001:2::1', '2001:10::1', '2001:1ff::1']],
  ['2001::/32', 'TEREDO', ['2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2']],
  ['2001:2::/48', 'Benchmarking', ['2001:2::5']],
  ['2001:db8::/32', 'Documentation', ['2001:db8::1', '2001:db8:ffff::1']],
  ['2002::/16', '6to4 (any IPv4 inside)', ['2002:7f00:1::1', '2002:a00:1::1', '2002:808:808::1']],
  ['3fff::/20', 'Documentation', ['3fff::1', '3fff:fff::1']],
  ['5f00::/16', 'Segment Routing (SRv6) SIDs', ['5f00::1']],
  ['fc00::/7', 'Unique-Local', ['fc00::1', 'fd12:3456::1']],
  ['fe80::/10', 'Link-Local Unicast', ['fe80::1', 'fe80::1%eth0', 'febf::1']],
  ['fec0::/10', 'Site-local (deprecated)', ['fec0::1']],
  ['ff00::/8', 'Multicast', ['ff02::1', 'ff05::2']],
  // Not addresses at all
  ['-', 'names and inet_aton forms', ['localhost', '0x7f.1', '2130706433', '127.1', '', 'example.com', '1.2.3.4.5']],
];

const PUBLIC: string[] = [
  '8.8.8.8',
  '1.1.1.1',
  '93.184.216.34',
  '100.63.255.255',
  '100.128.0.1',
  '172.15.255.255',
  '172.32.0.1',
  '192.0.1.1',
  '198.17.255.255',
  '198.20.0.1',
  '223.255.255.254',
  '2606:4700:4700::1111',
  '2a00:1450:4001:82b::200e',
  '2001:4860:4860::8888',
  '::ffff:8.8.8.8',
  '::ffff:0:8.8.8.8',
  '64:ff9b::8.8.8.8',
  '[2606:4700:4700::1111]',
];

describe('the public-address check against the IANA special-purpose registries', () => {
  // The IPv6 addresses checked (the finding was about IPv6 forms) make the summary's "IPv6 forms" row.
  const ipv6: Tally = { tried: 0, failed: 0 };
  const v6 = (addresses: string[]) => addresses.filter((a) => a.includes(':')).length;
  afterAll(() =>
    record({
      category: 'IPv6 forms',
      what: 'IPv6 addresses of every IANA special-purpose range and IPv6 forms carrying IPv4, classified',
      ...ipv6,
    }),
  );

  for (const [range, name, addresses] of NOT_PUBLIC)
    it(`refuses ${range} (${name})`, () =>
      tallied(ipv6, v6(addresses), () => {
        for (const a of addresses) expect(isPublicAddress(a), a).toBe(false);
        return Promise.resolve();
      }));

  it('accepts public unicast addresses of both families, also inside IPv6 forms that carry one', () =>
    tallied(ipv6, v6(PUBLIC), () => {
      for (const a of PUBLIC) expect(isPublicAddress(a), a).toBe(true);
      return Promise.resolve();
    }));
});

describe('host names in one normal form before any decision (issue 34, finding 8)', () => {
  it('folds case, trailing dots, brackets and IDN, so an allowlist or a refusal sees one name', () => {
    expect(normalizeHost('localhost.')).toBe('localhost');
    expect(normalizeHost('LOCALHOST..')).toBe('localhost');
    expect(normalizeHost('[::1]')).toBe('::1');
    expect(normalizeHost('Bücher.Example.')).toBe('xn--bcher-kva.example');
    expect(hostAndPort(new URL('http://LocalHost.:9/x'))).toBe('localhost:9');
    expect(hostAndPort(new URL('https://bücher.example./'))).toBe('xn--bcher-kva.example:443');
    // A configured host matches however the request spells it.
    expect(isConfiguredHost(hostAndPort(new URL('http://API.Example.com.:8080/')), ['api.example.com:8080'])).toBe(
      true,
    );
  });
});
