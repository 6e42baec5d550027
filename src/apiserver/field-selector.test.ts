import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from './api-error.js';
import { parseFieldSelector } from './field-selector.js';
import { findKind } from './kinds.js';
import type { KindInfo } from './kind-info.js';
import type { KubeObject } from './kube-object.js';

function kind(group: string, plural: string): KindInfo {
  const k = findKind(group, 'v1', plural);
  assert.ok(k, plural);
  return k;
}
const PODS = kind('', 'pods');

function badRequest(fn: () => unknown, message: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ApiError);
    assert.equal(e.reason, 'BadRequest');
    assert.equal(e.message, message);
    return true;
  });
}

const pod: KubeObject = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web-1', namespace: 'shop' },
  spec: { nodeName: 'node-a', serviceAccountName: 'web', restartPolicy: 'Always', schedulerName: 'default-scheduler' },
  status: { phase: 'Running', podIPs: [{ ip: '10.0.0.7' }, { ip: 'fd00::7' }], podIP: '10.0.0.7' },
};

test('parseFieldSelector: =, == and != on pod fields, comma is AND, an empty selector matches all', () => {
  const cases: [string, boolean][] = [
    ['', true],
    ['metadata.name=web-1', true],
    ['metadata.name==web-1', true],
    ['metadata.name!=web-1', false],
    ['metadata.namespace=shop,spec.nodeName=node-a', true],
    ['metadata.namespace=shop,spec.nodeName=node-b', false],
    ['status.phase=Running,status.podIP=10.0.0.7', true],
    ['spec.serviceAccountName=web,spec.restartPolicy=Always,spec.schedulerName=default-scheduler', true],
    ['spec.hostNetwork=false', true],
    ['spec.host=node-a', true],
    ['status.nominatedNodeName=', true],
    ['spec.nodeName!=', true],
    [',metadata.name=web-1,', true],
  ];
  for (const [sel, want] of cases) assert.equal(parseFieldSelector(sel, PODS).matches(pod), want, sel);
  assert.equal(parseFieldSelector('', PODS).empty, true);
  assert.equal(parseFieldSelector('spec.nodeName=x', PODS).empty, false);
});

test('parseFieldSelector: values unescape \\\\, \\, and \\=; bare = or , in a value and bad escapes are refused', () => {
  const cm: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a,b=c\\d', namespace: 'x' } };
  assert.equal(parseFieldSelector('metadata.name=a\\,b\\=c\\\\d', kind('', 'configmaps')).matches(cm), true);
  badRequest(
    () => parseFieldSelector('metadata.name=a=b', PODS),
    'invalid field selector: unescaped character in value: 61',
  );
  badRequest(
    () => parseFieldSelector('metadata.name=a\\x', PODS),
    'invalid field selector: invalid escape sequence: \\x',
  );
  badRequest(
    () => parseFieldSelector('metadata.name=a\\', PODS),
    'invalid field selector: invalid escape sequence: \\',
  );
  badRequest(
    () => parseFieldSelector('metadata.name', PODS),
    "invalid selector: 'metadata.name'; can't understand 'metadata.name'",
  );
});

test('parseFieldSelector: each kind accepts the field labels its upstream conversion accepts, worded as upstream refuses', () => {
  badRequest(() => parseFieldSelector('spec.containers=x', PODS), 'field label not supported: spec.containers');
  // Sorted terms are converted in order: the first unsupported label in sort order is reported.
  badRequest(() => parseFieldSelector('zzz=1,aaa=2', PODS), 'field label not supported: aaa');
  badRequest(
    () => parseFieldSelector('metadata.namespace=x', kind('', 'nodes')),
    'field label not supported: metadata.namespace',
  );
  badRequest(
    () => parseFieldSelector('metadata.namespace=x', kind('', 'namespaces')),
    'field label not supported: metadata.namespace',
  );
  badRequest(
    () => parseFieldSelector('status.active=1', kind('batch', 'jobs')),
    'field label "status.active" not supported for Job',
  );
  badRequest(
    () => parseFieldSelector('spec.replicas=1', kind('apps', 'deployments')),
    '"spec.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"',
  );
  badRequest(
    () => parseFieldSelector('spec.action=ALLOW', kind('security.istio.io', 'authorizationpolicies')),
    'field label not supported: spec.action',
  );
  for (const [group, plural, sel] of [
    ['', 'nodes', 'spec.unschedulable=true,metadata.name=n'],
    ['', 'namespaces', 'status.phase=Active'],
    ['', 'secrets', 'type=kubernetes.io/service-account-token'],
    ['', 'services', 'spec.clusterIP=None,spec.type=ClusterIP'],
    ['', 'events', 'involvedObject.kind=Pod,involvedObject.uid=u,reason=x,reportingComponent=y,source=z,type=Normal'],
    ['batch', 'jobs', 'status.successful=1'],
    ['', 'serviceaccounts', 'metadata.namespace=a'],
    ['gateway.networking.k8s.io', 'httproutes', 'metadata.namespace=a,metadata.name=b'],
  ] as const) {
    assert.doesNotThrow(() => parseFieldSelector(sel, kind(group, plural)), sel);
  }
});

test('parseFieldSelector: non-pod kinds match on their selectable fields (node unschedulable, event source, job successful)', () => {
  const node: KubeObject = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: { unschedulable: true } };
  assert.equal(parseFieldSelector('spec.unschedulable=true', kind('', 'nodes')).matches(node), true);
  assert.equal(parseFieldSelector('spec.unschedulable=false', kind('', 'nodes')).matches({ ...node, spec: {} }), true);
  const event: KubeObject = {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: 'e', namespace: 'ns' },
    involvedObject: { kind: 'Pod', name: 'web-1', namespace: 'ns' },
    reportingComponent: 'kubelet',
    type: 'Warning',
  };
  assert.equal(
    parseFieldSelector('involvedObject.name=web-1,source=kubelet,type=Warning', kind('', 'events')).matches(event),
    true,
  );
  const job: KubeObject = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'j', namespace: 'ns' },
    status: { succeeded: 2 },
  };
  assert.equal(parseFieldSelector('status.successful=2', kind('batch', 'jobs')).matches(job), true);
  assert.equal(parseFieldSelector('status.successful=0', kind('batch', 'jobs')).matches({ ...job, status: {} }), true);
  const secret: KubeObject = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's', namespace: 'ns' },
    type: 'Opaque',
  };
  assert.equal(parseFieldSelector('type!=Opaque', kind('', 'secrets')).matches(secret), false);
});

test('parseFieldSelector: requiresExactMatch gives the metadata.name a watch on one object needs', () => {
  assert.equal(
    parseFieldSelector('metadata.namespace=a,metadata.name=b', PODS).requiresExactMatch('metadata.name'),
    'b',
  );
  assert.equal(parseFieldSelector('metadata.name!=b', PODS).requiresExactMatch('metadata.name'), undefined);
  assert.equal(parseFieldSelector('spec.host=n', PODS).requiresExactMatch('spec.nodeName'), 'n');
});
