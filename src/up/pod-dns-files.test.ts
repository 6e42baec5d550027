import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { podHostsFile, podResolvConf } from './pod-dns-files.js';

const NODE = 'nameserver 10.255.255.53\nsearch corp.example\noptions timeout:2\n';
const pod = (spec: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod => ({
  metadata: { name: 'web-0', namespace: 'shop' },
  spec: { containers: [], ...spec },
});

test("ClusterFirst: the cluster nameserver, the namespace search path before the node's, ndots:5", () => {
  assert.equal(
    podResolvConf(pod(), NODE, '10.96.0.10'),
    'search shop.svc.cluster.local svc.cluster.local cluster.local corp.example\nnameserver 10.96.0.10\noptions ndots:5\n',
  );
});

test("without cluster DNS, and for dnsPolicy Default or a hostNetwork pod, the node's resolv.conf", () => {
  const nodeConf = 'search corp.example\nnameserver 10.255.255.53\noptions timeout:2\n';
  assert.equal(podResolvConf(pod(), NODE, undefined), nodeConf);
  assert.equal(podResolvConf(pod({ dnsPolicy: 'Default' }), NODE, '10.96.0.10'), nodeConf);
  assert.equal(podResolvConf(pod({ hostNetwork: true }), NODE, '10.96.0.10'), nodeConf);
  assert.match(
    podResolvConf(pod({ hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' }), NODE, '10.96.0.10'),
    /nameserver 10.96.0.10/,
  );
});

test('dnsPolicy None takes dnsConfig alone; dnsConfig options override by name', () => {
  assert.equal(
    podResolvConf(
      pod({
        dnsPolicy: 'None',
        dnsConfig: {
          nameservers: ['1.1.1.1'],
          searches: ['a.example'],
          options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }],
        },
      }),
      NODE,
      '10.96.0.10',
    ),
    'search a.example\nnameserver 1.1.1.1\noptions ndots:2 edns0\n',
  );
  assert.match(
    podResolvConf(pod({ dnsConfig: { options: [{ name: 'ndots', value: '1' }] } }), NODE, '10.96.0.10'),
    /options ndots:1\n$/,
  );
});

test("the hosts file names the pod's address with its hostname, its subdomain FQDN, and its hostAliases", () => {
  const hosts = podHostsFile(
    pod({
      hostname: 'db-0',
      subdomain: 'db',
      hostAliases: [{ ip: '10.1.2.3', hostnames: ['foo.local', 'bar.local'] }],
    }),
    '10.244.1.7',
  );
  assert.match(hosts, /^# Kubernetes-managed hosts file\.\n127\.0\.0\.1\tlocalhost\n/);
  assert.match(hosts, /\n10\.244\.1\.7\tdb-0\.db\.shop\.svc\.cluster\.local\tdb-0\n/);
  assert.match(hosts, /# Entries added by HostAliases\.\n10\.1\.2\.3\tfoo\.local\tbar\.local\n$/);
  assert.match(podHostsFile(pod(), '10.244.1.8'), /\n10\.244\.1\.8\tweb-0\n$/);
});
