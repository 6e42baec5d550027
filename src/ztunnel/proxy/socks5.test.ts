import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseGreeting, parseRequest, type Parse, type Target } from './socks5.js';

const b = (...bytes: number[]): Buffer => Buffer.from(bytes);
const domain = (name: string, port = 80): Buffer =>
  Buffer.concat([b(5, 1, 0, 3, name.length), Buffer.from(name, 'latin1'), b(port >> 8, port & 0xff)]);

test('SOCKS5 greeting (RFC 1928 §3): partial input waits, a wrong version is refused without a reply', () => {
  const rows: [string, Buffer, Parse<number[]>][] = [
    ['empty', b(), { t: 'more' }],
    ['version only', b(5), { t: 'more' }],
    ['methods announced but not all sent', b(5, 2, 0), { t: 'more' }],
    ['SOCKS4', b(4, 1, 0), { t: 'bad', why: 'not SOCKS5 (version byte 4)' }],
    ['HTTP sent to the SOCKS port', Buffer.from('GET / HTTP/1.1'), { t: 'bad', why: 'not SOCKS5 (version byte 71)' }],
    ['no methods at all', b(5, 0), { t: 'ok', value: [], used: 2 }],
    ['methods, request bytes after them left unread', b(5, 2, 2, 0, 5, 1), { t: 'ok', value: [2, 0], used: 4 }],
  ];
  for (const [what, input, want] of rows) assert.deepEqual(parseGreeting(input), want, what);
});

test('SOCKS5 request (RFC 1928 §4-5): IPv4, IPv6 in canonical form, domain names, and every malformed or unsupported request', () => {
  const v6 = b(5, 1, 0, 4, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0x1f, 0x90);
  const rows: [string, Buffer, Parse<Target>][] = [
    ['header not complete', b(5, 1, 0, 1), { t: 'more' }],
    ['IPv4 address cut short', b(5, 1, 0, 1, 10, 0, 0), { t: 'more' }],
    ['IPv4 port cut short', b(5, 1, 0, 1, 10, 0, 0, 1, 0), { t: 'more' }],
    [
      'IPv4',
      b(5, 1, 0, 1, 10, 96, 0, 10, 0, 80),
      { t: 'ok', value: { host: '10.96.0.10', port: 80, domain: false }, used: 10 },
    ],
    ['IPv6, written canonically', v6, { t: 'ok', value: { host: 'fd00::2', port: 8080, domain: false }, used: 22 }],
    ['IPv6 cut short', v6.subarray(0, 12), { t: 'more' }],
    [
      'domain name',
      domain('echo.backend.svc.cluster.local'),
      { t: 'ok', value: { host: 'echo.backend.svc.cluster.local', port: 80, domain: true }, used: 7 + 30 },
    ],
    ['domain name cut short', domain('echo.backend').subarray(0, 10), { t: 'more' }],
    [
      'bytes after the request stay unread',
      Buffer.concat([b(5, 1, 0, 1, 127, 0, 0, 1, 0, 80), Buffer.from('GET')]),
      { t: 'ok', value: { host: '127.0.0.1', port: 80, domain: false }, used: 10 },
    ],
    ['wrong version', b(4, 1, 0, 1, 10, 0, 0, 1, 0, 80), { t: 'bad', why: 'bad request version 4' }],
    ['BIND', b(5, 2, 0, 1, 10, 0, 0, 1, 0, 80), { t: 'bad', why: 'command 2 is not CONNECT', rep: 0x07 }],
    ['UDP ASSOCIATE', b(5, 3, 0, 1, 10, 0, 0, 1, 0, 80), { t: 'bad', why: 'command 3 is not CONNECT', rep: 0x07 }],
    ['reserved byte set', b(5, 1, 9, 1, 10, 0, 0, 1, 0, 80), { t: 'bad', why: 'reserved byte is 9, not 0', rep: 0x01 }],
    [
      'unknown address type',
      b(5, 1, 0, 2, 10, 0, 0, 1, 0, 80),
      { t: 'bad', why: 'address type 2 is not supported', rep: 0x08 },
    ],
    ['empty domain name', domain(''), { t: 'bad', why: 'domain name "" is not a hostname', rep: 0x04 }],
    [
      'domain name with a control byte',
      domain('a\nb'),
      { t: 'bad', why: 'domain name "a\\nb" is not a hostname', rep: 0x04 },
    ],
    [
      'domain name with a space',
      domain('a b.svc'),
      { t: 'bad', why: 'domain name "a b.svc" is not a hostname', rep: 0x04 },
    ],
    ['port 0', b(5, 1, 0, 1, 10, 0, 0, 1, 0, 0), { t: 'bad', why: 'port 0', rep: 0x04 }],
  ];
  for (const [what, input, want] of rows) assert.deepEqual(parseRequest(input), want, what);
});
