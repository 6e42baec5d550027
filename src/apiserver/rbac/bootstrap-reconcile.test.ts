import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { LogControl } from '../../lib/log.js';
import { ClusterIpAllocator } from '../cluster-ip-allocator.js';
import { findKind } from '../kinds.js';
import type { KindInfo } from '../kind-info.js';
import type { KubeObject } from '../kube-object.js';
import { NodePortAllocator } from '../node-port-allocator.js';
import { ResourceStore } from '../resource-store.js';
import { Storage } from '../storage.js';
import { compactString } from './rule-coverage.js';
import { policyRule, policyRulesOf } from './policy-rule.js';
import {
  BOOTSTRAP_POLICY_OBJECTS,
  reconcileBinding,
  reconcileBootstrapPolicy,
  reconcileRole,
} from './bootstrap-reconcile.js';
import { ClusterRoleAggregation } from './cluster-role-aggregation.js';
import { CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, RbacCache } from './rbac-cache.js';

const RBAC = 'rbac.authorization.k8s.io';
const LOGS = new LogControl({
  format: 'json',
  level: 'error',
  component: 'test',
  out: new Writable({ write: (_c, _e, cb) => cb() }),
});
const NAMESPACES = findKind('', 'v1', 'namespaces') as KindInfo;

/** A resource store over a fresh lmdb store, with the namespaces the bootstrap Roles live in. */
async function freshStore(t: TestContext): Promise<ResourceStore> {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-rbac-bootstrap-'));
  const storage = await Storage.open(dir);
  t.after(async () => {
    await storage.close();
    await rm(dir, { recursive: true, force: true });
  });
  const store = new ResourceStore(storage, new ClusterIpAllocator(), new NodePortAllocator(), LOGS.scope('store'));
  for (const name of ['kube-system', 'kube-public'])
    await store.create(NAMESPACES, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  return store;
}

const rules = (o: KubeObject | undefined): string[] => (o === undefined ? [] : policyRulesOf(o).map(compactString));

test("a role gets the policy's missing rules broken down, its labels and annotations where it has none, its missing selectors; nothing is taken away", () => {
  const expected: KubeObject = {
    apiVersion: `${RBAC}/v1`,
    kind: 'ClusterRole',
    metadata: { name: 'r', labels: { a: 'policy', b: 'policy' }, annotations: { note: 'policy' } },
    aggregationRule: { clusterRoleSelectors: [{ matchLabels: { x: 'true' } }, { matchLabels: { y: 'true' } }] },
    rules: [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] }],
  };
  const existing: KubeObject = {
    apiVersion: `${RBAC}/v1`,
    kind: 'ClusterRole',
    metadata: { name: 'r', labels: { a: 'mine' } },
    aggregationRule: { clusterRoleSelectors: [{ matchLabels: { y: 'true' } }, { matchLabels: { z: 'true' } }] },
    rules: [
      { verbs: ['get'], apiGroups: [''], resources: ['pods'] },
      { verbs: ['delete'], apiGroups: [''], resources: ['secrets'] },
    ],
  };
  assert.equal(reconcileRole(existing, expected), true);
  assert.deepEqual(existing.metadata, {
    name: 'r',
    labels: { a: 'mine', b: 'policy' },
    annotations: { note: 'policy' },
  });
  assert.deepEqual(rules(existing), [
    '{APIGroups:[""], Resources:["pods"], Verbs:["get"]}',
    '{APIGroups:[""], Resources:["secrets"], Verbs:["delete"]}',
    '{APIGroups:[""], Resources:["pods"], Verbs:["list"]}',
  ]);
  assert.deepEqual(existing.aggregationRule, {
    clusterRoleSelectors: [
      { matchLabels: { y: 'true' } },
      { matchLabels: { z: 'true' } },
      { matchLabels: { x: 'true' } },
    ],
  });
  assert.equal(reconcileRole(existing, expected), false, 'a second pass changes nothing');
});

test('a binding gets the subjects it lacks and keeps the ones an administrator added', () => {
  const subject = (name: string): object => ({ kind: 'Group', apiGroup: RBAC, name });
  const expected: KubeObject = {
    apiVersion: `${RBAC}/v1`,
    kind: 'ClusterRoleBinding',
    metadata: { name: 'b' },
    roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'b' },
    subjects: [subject('a'), subject('b')],
  };
  const existing = { ...structuredClone(expected), subjects: [subject('c'), subject('b')] };
  assert.equal(reconcileBinding(existing, expected), true);
  assert.deepEqual(existing.subjects, [subject('c'), subject('b'), subject('a')]);
});

test('the post-start hook creates the whole policy, then puts back what was taken from autoupdate objects only', async (t) => {
  const store = await freshStore(t);
  const log = LOGS.scope('rbac-bootstrap');
  await reconcileBootstrapPolicy(store, log);
  const count = (k: KindInfo): number => store.list(k, undefined).items.length;
  assert.equal(
    count(CLUSTER_ROLES) +
      count(CLUSTER_ROLE_BINDINGS) +
      count(findKind(RBAC, 'v1', 'roles')!) +
      count(findKind(RBAC, 'v1', 'rolebindings')!),
    BOOTSTRAP_POLICY_OBJECTS.length,
  );
  const basicUser = store.get(CLUSTER_ROLES, undefined, 'system:basic-user');
  assert.deepEqual(basicUser.metadata.labels, { 'kubernetes.io/bootstrapping': 'rbac-defaults' });
  assert.deepEqual(basicUser.metadata.annotations, { 'rbac.authorization.kubernetes.io/autoupdate': 'true' });

  await store.mutate(CLUSTER_ROLES, undefined, 'system:basic-user', (o) => {
    o.rules = [{ verbs: ['get'], apiGroups: [''], resources: ['configmaps'] }];
  });
  await store.mutate(CLUSTER_ROLES, undefined, 'system:public-info-viewer', (o) => {
    o.metadata.annotations = { 'rbac.authorization.kubernetes.io/autoupdate': 'false' };
    o.rules = [];
  });
  await store.mutate(CLUSTER_ROLE_BINDINGS, undefined, 'system:discovery', (o) => {
    o.subjects = [{ kind: 'Group', apiGroup: RBAC, name: 'partners' }];
  });
  await store.delete(CLUSTER_ROLE_BINDINGS, undefined, 'system:monitoring');
  await store.create(CLUSTER_ROLE_BINDINGS, undefined, {
    apiVersion: `${RBAC}/v1`,
    kind: 'ClusterRoleBinding',
    metadata: { name: 'system:monitoring' },
    roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'view' },
  });

  await reconcileBootstrapPolicy(store, log);
  assert.deepEqual(rules(store.get(CLUSTER_ROLES, undefined, 'system:basic-user')), [
    '{APIGroups:[""], Resources:["configmaps"], Verbs:["get"]}',
    '{APIGroups:["authorization.k8s.io"], Resources:["selfsubjectaccessreviews"], Verbs:["create"]}',
    '{APIGroups:["authorization.k8s.io"], Resources:["selfsubjectrulesreviews"], Verbs:["create"]}',
    '{APIGroups:["authentication.k8s.io"], Resources:["selfsubjectreviews"], Verbs:["create"]}',
  ]);
  assert.deepEqual(rules(store.get(CLUSTER_ROLES, undefined, 'system:public-info-viewer')), []);
  assert.deepEqual(store.get(CLUSTER_ROLE_BINDINGS, undefined, 'system:discovery').subjects, [
    { kind: 'Group', apiGroup: RBAC, name: 'partners' },
    { kind: 'Group', apiGroup: RBAC, name: 'system:authenticated' },
  ]);
  assert.deepEqual(store.get(CLUSTER_ROLE_BINDINGS, undefined, 'system:monitoring').roleRef, {
    apiGroup: RBAC,
    kind: 'ClusterRole',
    name: 'system:monitoring',
  });
});

test('admin, edit and view gather the rules of the roles labelled for them, and follow a new one', async (t) => {
  const store = await freshStore(t);
  await reconcileBootstrapPolicy(store, LOGS.scope('rbac-bootstrap'));
  const cache = RbacCache.follow(store, LOGS.scope('rbac'));
  t.after(() => cache.stop());
  const aggregation = new ClusterRoleAggregation(store, cache, LOGS.scope('aggregation'));
  await aggregation.start();
  t.after(() => aggregation.stop());
  const role = (name: string): string[] => rules(cache.clusterRole(name)?.object);
  const toView = role('system:aggregate-to-view');
  const toEdit = role('system:aggregate-to-edit');
  assert.deepEqual(role('view'), toView);
  assert.deepEqual(role('edit'), [...toEdit, ...toView]);
  // Each selector's roles by name: `edit` before `system:aggregate-to-admin`.
  assert.deepEqual(role('admin'), [...toEdit, ...toView, ...role('system:aggregate-to-admin')]);

  const crontabs = { verbs: ['get', 'list', 'watch'], apiGroups: ['stable.example.com'], resources: ['crontabs'] };
  const picked = new Promise<void>((resolve) => {
    const off = cache.onChange(() => {
      if (!role('view').includes(compactString(policyRule(crontabs)))) return;
      off();
      resolve();
    });
  });
  await store.create(CLUSTER_ROLES, undefined, {
    apiVersion: `${RBAC}/v1`,
    kind: 'ClusterRole',
    metadata: { name: 'crontab-viewer', labels: { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' } },
    rules: [crontabs],
  });
  await picked;
  assert.deepEqual(role('view'), [...rules(cache.clusterRole('crontab-viewer')?.object), ...toView]);
});
