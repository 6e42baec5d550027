import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../../lib/errors.js';
import { parseNameserver, parseResolvConf } from './resolv-conf.js';

test('resolv.conf: nameserver lines in order, timeout and attempts options, comments ignored', () => {
  const c = parseResolvConf(
    '# kubelet\nsearch a.svc.cluster.local svc.cluster.local\nnameserver 10.96.0.10\nnameserver fe80::1%eth0 ; zone\n;nameserver 9.9.9.9\noptions ndots:5 timeout:2 attempts:3\n',
    'x',
  );
  assert.deepEqual(c, {
    nameservers: [
      { host: '10.96.0.10', port: 53 },
      { host: 'fe80::1%eth0', port: 53 },
    ],
    timeoutMs: 2000,
    attempts: 3,
  });
  assert.deepEqual(parseResolvConf('nameserver 1.1.1.1', 'x'), {
    nameservers: [{ host: '1.1.1.1', port: 53 }],
    timeoutMs: 5000,
    attempts: 2,
  });
});

test('resolv.conf without a nameserver IP is ZT_ERR_DNS_RESOLV_CONF', () => {
  assert.throws(
    () => parseResolvConf('search x\nnameserver dns.example\n', '/etc/resolv.conf'),
    (e) => isMeshError(e, 'ZT_ERR_DNS_RESOLV_CONF'),
  );
});

test('an explicit upstream is ip, ip:port or [ipv6]:port', () => {
  assert.deepEqual(parseNameserver('10.0.0.1'), { host: '10.0.0.1', port: 53 });
  assert.deepEqual(parseNameserver('::1'), { host: '::1', port: 53 });
  assert.deepEqual(parseNameserver('127.0.95.53:5353'), { host: '127.0.95.53', port: 5353 });
  assert.deepEqual(parseNameserver('[::1]:5353'), { host: '::1', port: 5353 });
  assert.throws(
    () => parseNameserver('dns.example:53'),
    (e) => isMeshError(e, 'ZT_ERR_DNS_RESOLV_CONF'),
  );
});
