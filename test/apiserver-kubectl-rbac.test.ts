/**
 * RBAC against kubectl as against a real cluster: the bootstrap policy is there from the first start, a service
 * account gets rights only from a binding (and loses them with it), a user cannot grant what it does not hold,
 * and a binding to a missing role says so in the 403.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { startApiServer } from './helpers/in-process.js';
import type { ApiServer } from '../src/apiserver/api-server.js';

const WEB = 'system:serviceaccount:shop:web';
const DEPLOYER = 'system:serviceaccount:shop:deployer';

describe('RBAC with kubectl against amesh apiserver', { skip: kubectlSkip }, () => {
  let dir: string;
  let api: ApiServer;
  const { kubectl, ok } = kubectlWith(() => api.kubeconfigPath);
  /** `kubectl auth can-i`'s answer: its exit status says yes (0) or no (1). */
  const canI = async (...args: string[]): Promise<boolean> => {
    const r = await kubectl('auth', 'can-i', ...args);
    assert.ok(r.status === 0 || r.status === 1, `kubectl auth can-i ${args.join(' ')}: ${r.stderr}`);
    return r.status === 0;
  };

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-kubectl-rbac-'));
    api = await startApiServer(path.join(dir, 'data'));
    await ok('create', 'namespace', 'shop');
    await ok('create', 'serviceaccount', 'web', '-n', 'shop');
    await ok('create', 'serviceaccount', 'deployer', '-n', 'shop');
  });
  after(async () => {
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test("get clusterroles lists Kubernetes' bootstrap roles, labelled and annotated for reconciliation", async () => {
    const roles = await ok('get', 'clusterroles');
    assert.match(roles.split('\n')[0] ?? '', /^NAME\s+CREATED AT$/);
    for (const name of [
      'admin',
      'cluster-admin',
      'edit',
      'view',
      'system:discovery',
      'system:basic-user',
      'system:node',
      'system:kube-scheduler',
      'system:controller:deployment-controller',
      'system:controller:clusterrole-aggregation-controller',
    ])
      assert.match(roles, new RegExp(`^${name}\\s+\\d{4}-\\d\\d-\\d\\dT`, 'm'), name);
    const bindings = await ok('get', 'clusterrolebindings', '-o', 'wide');
    assert.match(bindings, /^cluster-admin\s+ClusterRole\/cluster-admin\s+\S+\s+system:masters/m);
    assert.match(
      bindings,
      /^system:controller:job-controller\s+ClusterRole\/system:controller:job-controller\s+\S+\s+kube-system\/job-controller/m,
    );
    assert.match(await ok('get', 'roles', '-n', 'kube-system'), /^system::leader-locking-kube-scheduler\s/m);
    const basic = JSON.parse(await ok('get', 'clusterrole', 'system:basic-user', '-o', 'json')) as {
      metadata: { labels: Record<string, string>; annotations: Record<string, string> };
    };
    assert.equal(basic.metadata.labels['kubernetes.io/bootstrapping'], 'rbac-defaults');
    assert.equal(basic.metadata.annotations['rbac.authorization.kubernetes.io/autoupdate'], 'true');
  });

  test('view has the rules its aggregation rule gathers, and a role labelled for it adds to them', async () => {
    const rules = async (): Promise<string> =>
      JSON.stringify((JSON.parse(await ok('get', 'clusterrole', 'view', '-o', 'json')) as { rules: unknown }).rules);
    assert.match(await rules(), /"resources":\["configmaps","endpoints"/);
    // A CRD's installer extends view this way (the CRD itself need not exist for its role to be stored).
    await writeFile(
      path.join(dir, 'crontab-viewer.yaml'),
      stringify({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'crontab-viewer', labels: { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' } },
        rules: [{ apiGroups: ['stable.example.com'], resources: ['crontabs'], verbs: ['get', 'list'] }],
      }),
    );
    await ok('apply', '-f', path.join(dir, 'crontab-viewer.yaml'));
    await ok('wait', '--for=jsonpath={.rules[0].resources[0]}=crontabs', 'clusterrole/view', '--timeout=20s');
  });

  test('a service account may list pods only once a RoleBinding grants it, only in that namespace, and no more once it is gone', async () => {
    assert.equal(await canI('list', 'pods', '-n', 'shop', `--as=${WEB}`), false);
    await ok('create', 'role', 'pod-reader', '--verb=get,list,watch', '--resource=pods', '-n', 'shop');
    assert.equal(await canI('list', 'pods', '-n', 'shop', `--as=${WEB}`), false);
    await ok('create', 'rolebinding', 'web-reads', '--role=pod-reader', '--serviceaccount=shop:web', '-n', 'shop');
    assert.equal(await canI('list', 'pods', '-n', 'shop', `--as=${WEB}`), true);
    assert.equal(await canI('list', 'pods', '-n', 'default', `--as=${WEB}`), false);
    assert.equal(await canI('delete', 'pods', '-n', 'shop', `--as=${WEB}`), false);
    assert.match(await ok('get', 'pods', '-n', 'shop', `--as=${WEB}`), /^$|No resources found/);
    await ok('delete', 'rolebinding', 'web-reads', '-n', 'shop');
    assert.equal(await canI('list', 'pods', '-n', 'shop', `--as=${WEB}`), false);
    const refused = await kubectl('get', 'pods', '-n', 'shop', `--as=${WEB}`);
    assert.equal(refused.status, 1);
    assert.match(
      refused.stderr,
      /Error from server \(Forbidden\): pods is forbidden: User "system:serviceaccount:shop:web" cannot list resource "pods" in API group "" in the namespace "shop"/,
    );
  });

  test("a user may not grant what it does not hold: kube's escalation message, for a role and for a binding", async () => {
    await ok(
      'create',
      'role',
      'deployer',
      '--verb=get,list,create,update',
      '--resource=pods,roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io',
      '-n',
      'shop',
    );
    await ok('create', 'rolebinding', 'deployer', '--role=deployer', '--serviceaccount=shop:deployer', '-n', 'shop');
    const role = await kubectl(
      'create',
      'role',
      'secrets',
      '--verb=get',
      '--resource=secrets',
      '-n',
      'shop',
      `--as=${DEPLOYER}`,
    );
    assert.equal(role.status, 1);
    assert.equal(
      role.stderr.trim(),
      `Error from server (Forbidden): roles.rbac.authorization.k8s.io "secrets" is forbidden: user "${DEPLOYER}" (groups=["system:serviceaccounts" "system:serviceaccounts:shop" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`,
    );
    await ok('create', 'role', 'pods', '--verb=get', '--resource=pods', '-n', 'shop', `--as=${DEPLOYER}`);
    const binding = await kubectl(
      'create',
      'rolebinding',
      'web-edits',
      '--clusterrole=edit',
      '--serviceaccount=shop:web',
      '-n',
      'shop',
      `--as=${DEPLOYER}`,
    );
    assert.equal(binding.status, 1);
    assert.match(
      binding.stderr,
      /^error: failed to create rolebinding: rolebindings\.rbac\.authorization\.k8s\.io "web-edits" is forbidden: user "system:serviceaccount:shop:deployer" .* is attempting to grant RBAC permissions not currently held:\n\{APIGroups:\[""\], Resources:\["bindings"\], Verbs:\["get" "list" "watch"\]\}\n\{APIGroups:\[""\], Resources:\["configmaps"\], Verbs:\["create" "delete" "deletecollection" "patch" "update" "get" "list" "watch"\]\}\n/,
    );
    await ok(
      'create',
      'rolebinding',
      'web-pods',
      '--role=pods',
      '--serviceaccount=shop:web',
      '-n',
      'shop',
      `--as=${DEPLOYER}`,
    );
    assert.equal(await canI('get', 'pods', '-n', 'shop', `--as=${WEB}`), true);
  });

  test('a binding to a role that does not exist grants nothing, and the 403 names the missing role', async () => {
    await ok('create', 'rolebinding', 'ghost', '--role=ghost', '--user=carol', '-n', 'shop');
    const r = await kubectl('get', 'configmaps', '-n', 'shop', '--as=carol');
    assert.equal(r.status, 1);
    assert.match(
      r.stderr,
      /configmaps is forbidden: User "carol" cannot list resource "configmaps" in API group "" in the namespace "shop": RBAC: role\.rbac\.authorization\.k8s\.io "ghost" not found/,
    );
  });
});
