import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { podSysctls } from './pod-sysctls.js';

const pod = (sysctls: { name: string; value: string }[], hostNetwork = false): V1Pod => ({
  spec: { containers: [], hostNetwork, securityContext: { sysctls } },
});

test('a safe network sysctl is set, with either separator', () => {
  assert.deepEqual(
    podSysctls(
      pod([
        { name: 'net.ipv4.ip_unprivileged_port_start', value: '0' },
        { name: 'net/ipv4/tcp_keepalive_time', value: '60' },
      ]),
    ),
    [
      { name: 'net.ipv4.ip_unprivileged_port_start', value: '0' },
      { name: 'net.ipv4.tcp_keepalive_time', value: '60' },
    ],
  );
});

test('an unsafe sysctl is SysctlForbidden, as kubelet refuses it', () => {
  assert.throws(
    () => podSysctls(pod([{ name: 'net.core.somaxconn', value: '1024' }])),
    (e: Error & { code?: string }) => e.code === 'UP_ERR_SYSCTL' && /not allowlisted/.test(e.message),
  );
});

test('a pod on the node network may set no network sysctl', () => {
  assert.throws(
    () => podSysctls(pod([{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }], true)),
    /host net enabled/,
  );
});
