import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { proxyRules, restoreInput } from './proxy-rules.js';

const svc = (name: string, spec: V1Service['spec']): V1Service => ({ metadata: { name, namespace: 'shop' }, spec });
const slice = (service: string, endpoints: V1EndpointSlice['endpoints'], port = 8080): V1EndpointSlice => ({
  metadata: { name: `${service}-abc`, namespace: 'shop', labels: { 'kubernetes.io/service-name': service } },
  addressType: 'IPv4',
  endpoints,
  ports: [{ name: 'http', port, protocol: 'TCP' }],
});
const inputs = {
  node: 'node1',
  clusterCidr: '10.244.0.0/16',
  services: [
    svc('web', { clusterIP: '10.96.0.20', ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30080 }] }),
    svc('empty', { clusterIP: '10.96.0.21', ports: [{ name: 'http', port: 80 }] }),
    svc('headless', { clusterIP: 'None', ports: [{ name: 'http', port: 80 }] }),
    svc('local', { clusterIP: '10.96.0.22', internalTrafficPolicy: 'Local', ports: [{ name: 'http', port: 80 }] }),
  ],
  slices: [
    slice('web', [
      { addresses: ['10.244.0.5'], conditions: { ready: true } },
      { addresses: ['10.244.1.7'], conditions: { ready: true } },
      { addresses: ['10.244.1.8'], conditions: { ready: false, serving: true, terminating: true } },
    ]),
    slice('local', [
      { addresses: ['10.244.0.9'], nodeName: 'node1' },
      { addresses: ['10.244.1.9'], nodeName: 'node2' },
    ]),
  ],
};

test('a ClusterIP goes to KUBE-SVC-<hash>, which picks a ready endpoint at random and DNATs in its KUBE-SEP chain; a NodePort through KUBE-EXT, masqueraded', () => {
  const r = proxyRules(inputs);
  const svcChain = r.nat.find((l) => l.includes('-d 10.96.0.20/32'))!.split('-j ')[1]!;
  assert.match(svcChain, /^KUBE-SVC-[A-Z2-7]{16}$/);
  const picks = r.nat.filter((l) => l.startsWith(`-A ${svcChain} `) && l.includes('-j KUBE-SEP-'));
  assert.deepEqual(
    picks.map((l) => [/-> (\S+)"/.exec(l)?.[1], /--probability (\S+)/.exec(l)?.[1]]),
    [
      ['10.244.0.5:8080', '0.5000000000'],
      ['10.244.1.7:8080', undefined],
    ],
    'the terminating endpoint is left out; the last pick takes whatever is left',
  );
  assert.ok(r.nat.some((l) => l.includes('-j DNAT --to-destination 10.244.1.7:8080')));
  assert.ok(
    r.nat.some(
      (l) => l.startsWith(`-A ${svcChain} `) && l.includes('! -s 10.244.0.0/16') && l.endsWith('-j KUBE-MARK-MASQ'),
    ),
  );
  assert.ok(r.nat.some((l) => l.includes('--dport 30080') && l.includes('-j KUBE-EXT-')));
  assert.equal(
    r.nat.at(-1),
    '-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS',
  );
});

test("a Service port without a ready endpoint is rejected in the filter table; headless Services get no rule; Local traffic policy keeps this node's endpoints", () => {
  const r = proxyRules(inputs);
  assert.deepEqual(r.filter, [
    '-A KUBE-SERVICES -m comment --comment "shop/empty:http" -d 10.96.0.21/32 -p tcp -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable',
  ]);
  assert.ok(!r.nat.some((l) => l.includes('shop/headless')));
  const local = r.nat.filter((l) => l.includes('shop/local') && l.includes('DNAT'));
  assert.deepEqual(
    local.map((l) => l.split('--to-destination ')[1]),
    ['10.244.0.9:8080'],
  );
});

test('a sync declares (flushes) every chain it writes and deletes the chains the previous sync wrote that are gone', () => {
  const before = proxyRules(inputs);
  const after = proxyRules({ ...inputs, slices: [] });
  const text = restoreInput(after, before);
  const gone = before.natChains.filter((c) => !after.natChains.includes(c));
  assert.ok(gone.length > 0);
  for (const c of gone) {
    assert.ok(text.includes(`:${c} - [0:0]\n`), `${c} declared`);
    assert.ok(text.includes(`-X ${c}\n`), `${c} deleted`);
  }
  assert.match(text, /^\*nat\n:KUBE-SERVICES - \[0:0\]\n/);
  assert.match(text, /COMMIT\n\*filter\n[\s\S]*COMMIT\n$/);
});

test("a LoadBalancer Service's ingress address goes to its KUBE-EXT chain, masqueraded, then to the Service's endpoints", () => {
  const lb = svc('web', {
    type: 'LoadBalancer',
    clusterIP: '10.96.0.20',
    ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30080 }],
  });
  lb.status = { loadBalancer: { ingress: [{ ip: '10.240.0.128' }] } };
  const r = proxyRules({ ...inputs, services: [lb] });
  const entry = r.nat.find((l) => l.includes('-d 10.240.0.128/32'));
  assert.match(entry ?? '', /^-A KUBE-SERVICES .*--dport 80 -j KUBE-EXT-[A-Z2-7]{16}$/);
  const ext = entry!.split('-j ')[1]!;
  assert.deepEqual(
    r.nat.filter((l) => l.startsWith(`-A ${ext} `)).map((l) => l.split('-j ')[1]),
    ['KUBE-MARK-MASQ', r.nat.find((l) => l.includes('-d 10.96.0.20/32'))!.split('-j ')[1]],
  );
});
