import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { hostTcp } from './host-tcp.js';

test('hostTcp: reports the congestion control and qdisc the kernel gives new sockets, as /proc/sys has them', (t) => {
  let expected: string;
  try {
    expected = readFileSync('/proc/sys/net/ipv4/tcp_congestion_control', 'utf8').trim();
  } catch {
    t.skip('no /proc/sys/net/ipv4/tcp_congestion_control on this host (not Linux)');
    return;
  }
  const tcp = hostTcp();
  assert.equal(tcp.congestionControl, expected);
  assert.match(tcp.defaultQdisc, /^[a-z_]+$/);
  assert.ok(Object.isFrozen(tcp));
});
