import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../lib/errors.js';
import { clusterDnsIp, clusterDnsObjects } from './cluster-dns-manifest.js';

test("kube-dns's ClusterIP is the tenth address of the service CIDR, as kubeadm's GetDNSIP picks it", () => {
  assert.equal(clusterDnsIp('10.96.0.0/12'), '10.96.0.10');
  assert.equal(clusterDnsIp('10.96.0.0/16'), '10.96.0.10');
  assert.equal(clusterDnsIp('10.96.5.7/24'), '10.96.5.10');
  assert.equal(clusterDnsIp('fd00:10:96::/108'), 'fd00:10:96::a');
  for (const bad of ['10.96.0.0/29', '10.96.0.10', 'nope/16'])
    assert.throws(
      () => clusterDnsIp(bad),
      (e) => isMeshError(e, 'AMESH_ERR_CONFIG'),
      bad,
    );
});

test("the objects are kubeadm's CoreDNS add-on: ServiceAccount and Deployment coredns, Service kube-dns, in kube-system", () => {
  const [sa, deployment, service] = clusterDnsObjects({ serviceCidr: '10.96.0.0/16' });
  assert.deepEqual(sa, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'coredns', namespace: 'kube-system' },
  });

  assert.equal(deployment.metadata?.name, 'coredns');
  assert.equal(deployment.metadata?.namespace, 'kube-system');
  assert.deepEqual(deployment.metadata?.labels, { 'k8s-app': 'kube-dns' });
  assert.equal(deployment.spec?.replicas, 2);
  assert.deepEqual(deployment.spec?.selector.matchLabels, { 'k8s-app': 'kube-dns' });
  const pod = deployment.spec?.template.spec;
  assert.equal(pod?.serviceAccountName, 'coredns');
  assert.equal(pod?.dnsPolicy, 'Default');
  const c = pod?.containers[0];
  assert.equal(c?.image, 'amesh');
  assert.deepEqual(c?.command?.slice(-3), ['cluster-dns', '--cluster-domain', 'cluster.local']);
  assert.deepEqual(
    c?.ports?.map((p) => [p.name, p.containerPort, p.protocol]),
    [
      ['dns', 53, 'UDP'],
      ['dns-tcp', 53, 'TCP'],
      ['metrics', 9153, 'TCP'],
      ['liveness-probe', 8080, 'TCP'],
      ['readiness-probe', 8181, 'TCP'],
    ],
  );
  assert.deepEqual(c?.readinessProbe?.httpGet, { path: '/ready', port: 'readiness-probe', scheme: 'HTTP' });
  assert.deepEqual(c?.livenessProbe?.httpGet, { path: '/health', port: 'liveness-probe', scheme: 'HTTP' });

  assert.equal(service.metadata?.name, 'kube-dns');
  assert.equal(service.metadata?.namespace, 'kube-system');
  assert.equal(service.metadata?.labels?.['k8s-app'], 'kube-dns');
  assert.equal(service.spec?.clusterIP, '10.96.0.10');
  assert.deepEqual(service.spec?.selector, { 'k8s-app': 'kube-dns' });
  assert.deepEqual(
    service.spec?.ports?.map((p) => [p.name, p.port, p.protocol, p.targetPort]),
    [
      ['dns', 53, 'UDP', 53],
      ['dns-tcp', 53, 'TCP', 53],
      ['metrics', 9153, 'TCP', 9153],
    ],
  );
});

test('another cluster domain, replica count and a kubeconfig reach the command and the Deployment', () => {
  const [, deployment] = clusterDnsObjects({
    serviceCidr: '10.100.0.0/16',
    clusterDomain: 'corp.internal',
    replicas: 1,
    kubeconfig: '/var/lib/amesh/coredns.kubeconfig',
  });
  assert.equal(deployment.spec?.replicas, 1);
  assert.deepEqual(deployment.spec?.template.spec?.containers[0]?.command?.slice(-5), [
    'cluster-dns',
    '--cluster-domain',
    'corp.internal',
    '--kubeconfig',
    '/var/lib/amesh/coredns.kubeconfig',
  ]);
});
