import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  bigIntToIpBytes,
  canonicalIp,
  canonicalUnmappedIp,
  formatIp,
  formatRemote,
  ipBytes,
  ipToBigInt,
  parseHostPort,
} from './ip.js';

test('canonicalIp: every spelling of an IPv6 address becomes the one Node prints (RFC 5952)', () => {
  for (const [given, canonical] of [
    ['FD00:0:0::1', 'fd00::1'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'], // the first of two equal zero runs is compressed
    ['1:0:3:4:5:6:7:8', '1:0:3:4:5:6:7:8'], // a single zero group is not
    ['0:0:0:0:0:ffff:0a00:0001', '::ffff:10.0.0.1'], // mapped IPv4 keeps the dotted tail
    ['10.0.0.1', '10.0.0.1'],
  ])
    assert.equal(canonicalIp(given!), canonical, given);
  assert.equal(canonicalIp('fd00::1::2'), undefined);
  assert.equal(canonicalIp('example.com'), undefined);
});

test('formatIp: raw 4- and 16-byte addresses (xDS, SOCKS5) round-trip through ipBytes in canonical form', () => {
  for (const ip of ['10.1.2.3', '::1', 'fd00::a:0:0:1', '2001:db8::1:0:0:1', '::ffff:10.0.0.1', '::']) {
    assert.equal(formatIp(ipBytes(ip)!), ip);
  }
  assert.equal(formatIp(new Uint8Array(5)), undefined);
});

test('parseHostPort: a bracketed IPv6 :authority comes back canonical; bad forms are refused', () => {
  assert.deepEqual(parseHostPort('[FD00:0::1]:8080'), { host: 'fd00::1', port: 8080 });
  assert.deepEqual(parseHostPort('10.0.0.1:80'), { host: '10.0.0.1', port: 80 });
  for (const bad of ['[10.0.0.1]:80', 'fd00::1:80', '[fd00::1]', '10.0.0.1:0', '10.0.0.1:65536', '[zz::1]:80']) {
    assert.equal(parseHostPort(bad), undefined, bad);
  }
});

test('canonicalUnmappedIp: an IPv4-mapped IPv6 address is its IPv4 address, as Go netip.Addr.Unmap, other IPv6 stays canonical', () => {
  assert.equal(canonicalUnmappedIp('::FFFF:10.1.2.3'), '10.1.2.3');
  assert.equal(canonicalUnmappedIp('FD00:0::1'), 'fd00::1');
  assert.equal(canonicalUnmappedIp('10.1.2.3'), '10.1.2.3');
  assert.equal(canonicalUnmappedIp('10.1.2.300'), undefined);
});

test("formatRemote: a socket's peer as ztunnel logs it, IPv6 in brackets, ? for what a closed socket forgot", () => {
  assert.equal(formatRemote({ remoteAddress: '10.0.0.1', remotePort: 8080 }), '10.0.0.1:8080');
  assert.equal(formatRemote({ remoteAddress: 'fd00::5', remotePort: 43210 }), '[fd00::5]:43210');
  assert.equal(formatRemote({}), '?:?');
});

test('ipToBigInt / bigIntToIpBytes: an address as one number, most significant byte first, and back', () => {
  assert.equal(ipToBigInt(ipBytes('240.240.0.1')!), 0xf0f00001n);
  assert.equal(ipToBigInt(ipBytes('2001:2::1')!), (0x20010002n << 96n) + 1n);
  for (const ip of ['0.0.0.0', '255.255.255.255', '2001:2::ffff', '::'])
    assert.equal(formatIp(bigIntToIpBytes(ipToBigInt(ipBytes(ip)!), ipBytes(ip)!.length)), ip);
});
