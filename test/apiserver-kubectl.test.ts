import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { startApiServer } from './helpers/in-process.js';
import type { ApiServer } from '../src/apiserver/api-server.js';

const MANIFESTS = `
apiVersion: v1
kind: Namespace
metadata:
  name: shop
  labels:
    istio.io/dataplane-mode: ambient
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
data:
  color: blue
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 2
  selector:
    matchLabels: { app: web }
  template:
    metadata:
      labels: { app: web }
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - containerPort: 80
        env:
        - { name: A, value: "1" }
        - { name: B, value: "2" }
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  selector: { app: web }
  ports:
  - port: 80
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: allow-frontend
  namespace: shop
spec:
  action: ALLOW
  rules:
  - from:
    - source:
        principals: ["cluster.local/ns/shop/sa/frontend"]
`;

describe('kubectl 1.32 against amesh apiserver', { skip: kubectlSkip }, () => {
  let dir: string;
  let api: ApiServer;
  const { kubectl, ok } = kubectlWith(() => api.kubeconfigPath);

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-kubectl-'));
    api = await startApiServer(path.join(dir, 'data'));
    await writeFile(path.join(dir, 'shop.yaml'), MANIFESTS);
  });
  after(async () => {
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('a new cluster has the system namespaces and the kubernetes Service on the first address of the range', async () => {
    const ns = await ok('get', 'namespaces', '-o', 'name');
    for (const n of ['default', 'kube-system', 'kube-public', 'kube-node-lease'])
      assert.match(ns, new RegExp(`^namespace/${n}$`, 'm'));
    const svc = JSON.parse(await ok('get', 'service', 'kubernetes', '-o', 'json')) as {
      spec: { clusterIP: string; ports: { port: number }[] };
    };
    assert.equal(svc.spec.clusterIP, '10.96.0.1');
    assert.equal(svc.spec.ports[0]?.port, 443);
    const slice = JSON.parse(await ok('get', 'endpointslice', 'kubernetes', '-o', 'json')) as {
      endpoints: { addresses: string[] }[];
      ports: { port: number }[];
    };
    assert.deepEqual(slice.endpoints[0]?.addresses, ['127.0.0.1']);
    assert.equal(slice.ports[0]?.port, api.port);
  });

  test('apply with default validation creates every kind, and applying again is unchanged', async () => {
    const first = await ok('apply', '-f', path.join(dir, 'shop.yaml'));
    assert.match(first, /namespace\/shop created/);
    assert.match(first, /deployment\.apps\/web created/);
    assert.match(first, /authorizationpolicy\.security\.istio\.io\/allow-frontend created/);
    const again = await ok('apply', '-f', path.join(dir, 'shop.yaml'));
    assert.match(again, /deployment\.apps\/web unchanged/);
    assert.match(again, /service\/web unchanged/);
  });

  test('get -o json returns the stored object with system fields, and the Service got a ClusterIP', async () => {
    const svc = JSON.parse(await ok('get', 'service', 'web', '-n', 'shop', '-o', 'json')) as {
      metadata: { uid: string; resourceVersion: string; creationTimestamp: string };
      spec: { clusterIP: string; ports: { protocol: string; targetPort: number }[] };
    };
    assert.match(svc.metadata.uid, /^[0-9a-f-]{36}$/);
    assert.match(svc.metadata.resourceVersion, /^\d+$/);
    assert.match(svc.spec.clusterIP, /^10\.96\.\d+\.\d+$/);
    assert.equal(svc.spec.ports[0]?.protocol, 'TCP');
  });

  test('get prints tables, across namespaces and by short name', async () => {
    const out = await ok('get', 'svc', '-A');
    assert.match(out.split('\n')[0] ?? '', /^NAMESPACE\s+NAME\s+TYPE\s+CLUSTER-IP/);
    assert.match(out, /shop\s+web\s+ClusterIP\s+10\.96\./);
    assert.match(await ok('get', 'ap', '-n', 'shop'), /allow-frontend\s+ALLOW/);
  });

  test('label, annotate and the three patch types change what they name', async () => {
    await ok('label', 'deployment', 'web', '-n', 'shop', 'tier=front');
    await ok('annotate', 'deployment', 'web', '-n', 'shop', 'note=hello');
    await ok(
      'patch',
      'deployment',
      'web',
      '-n',
      'shop',
      '-p',
      '{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"C","value":"3"}]}]}}}}',
    );
    await ok('patch', 'configmap', 'settings', '-n', 'shop', '--type', 'merge', '-p', '{"data":{"size":"L"}}');
    await ok(
      'patch',
      'authorizationpolicy',
      'allow-frontend',
      '-n',
      'shop',
      '--type',
      'json',
      '-p',
      '[{"op":"replace","path":"/spec/action","value":"DENY"}]',
    );
    const d = JSON.parse(await ok('get', 'deployment', 'web', '-n', 'shop', '-o', 'json')) as {
      metadata: { labels: Record<string, string>; annotations: Record<string, string> };
      spec: { template: { spec: { containers: { env: { name: string }[] }[] } } };
    };
    assert.equal(d.metadata.labels.tier, 'front');
    assert.equal(d.metadata.annotations.note, 'hello');
    assert.deepEqual(d.spec.template.spec.containers[0]?.env.map((e) => e.name).sort(), ['A', 'B', 'C']);
    assert.equal(
      (JSON.parse(await ok('get', 'cm', 'settings', '-n', 'shop', '-o', 'json')) as { data: Record<string, string> })
        .data.size,
      'L',
    );
    assert.equal(
      (JSON.parse(await ok('get', 'ap', 'allow-frontend', '-n', 'shop', '-o', 'json')) as { spec: { action: string } })
        .spec.action,
      'DENY',
    );
  });

  test('a strategic merge patch is refused for a custom resource, as the API server refuses it', async () => {
    const r = await kubectl(
      'patch',
      'authorizationpolicy',
      'allow-frontend',
      '-n',
      'shop',
      '-p',
      '{"spec":{"action":"ALLOW"}}',
    );
    assert.notEqual(r.status, 0);
    assert.match(
      r.stderr,
      /application\/strategic-merge-patch\+json is not supported|unknown format|UnsupportedMediaType|415/i,
    );
  });

  test('invalid objects are refused with 422 and the field path', async () => {
    await writeFile(
      path.join(dir, 'bad.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n  namespace: shop\n',
    );
    const r = await kubectl('apply', '-f', path.join(dir, 'bad.yaml'));
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /metadata\.name: Invalid value: "Bad_Name"/);
  });

  test("a cluster add-on's kinds (DaemonSet, StatefulSet, ControllerRevision, Lease, webhook configurations) apply with Kubernetes' defaults and print kubectl's columns", async () => {
    const template = {
      metadata: { labels: { app: 'agent' } },
      spec: { containers: [{ name: 'agent', image: 'amesh', command: ['sleep', '1000'] }] },
    };
    const docs = [
      {
        apiVersion: 'apps/v1',
        kind: 'DaemonSet',
        metadata: { name: 'agent', namespace: 'shop' },
        spec: {
          selector: { matchLabels: { app: 'agent' } },
          template: { ...template, spec: { ...template.spec, nodeSelector: { 'kubernetes.io/os': 'linux' } } },
        },
      },
      {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: 'db', namespace: 'shop' },
        spec: { serviceName: 'db', selector: { matchLabels: { app: 'agent' } }, template },
      },
      {
        apiVersion: 'apps/v1',
        kind: 'ControllerRevision',
        metadata: { name: 'db-1', namespace: 'shop' },
        data: { spec: {} },
        revision: 1,
      },
      {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'node1', namespace: 'kube-node-lease' },
        spec: { holderIdentity: 'node1', leaseDurationSeconds: 40 },
      },
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: 'istio-validator-istio-system' },
        webhooks: [
          {
            name: 'rev.validation.istio.io',
            clientConfig: { service: { name: 'istiod', namespace: 'istio-system', path: '/validate' } },
            rules: [
              {
                operations: ['CREATE', 'UPDATE'],
                apiGroups: ['security.istio.io'],
                apiVersions: ['*'],
                resources: ['*'],
              },
            ],
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
          },
        ],
      },
    ];
    await writeFile(path.join(dir, 'addons.yaml'), docs.map((d) => stringify(d)).join('---\n'));
    const applied = await ok('apply', '-f', path.join(dir, 'addons.yaml'));
    for (const what of [
      'daemonset.apps/agent',
      'statefulset.apps/db',
      'controllerrevision.apps/db-1',
      'lease.coordination.k8s.io/node1',
      'validatingwebhookconfiguration.admissionregistration.k8s.io/istio-validator-istio-system',
    ])
      assert.match(applied, new RegExp(`${what.replaceAll('.', '\\.')} created`));
    assert.match(
      await ok('get', 'ds', '-n', 'shop'),
      /^NAME\s+DESIRED\s+CURRENT\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+NODE SELECTOR\s+AGE\nagent\s+0\s+0\s+0\s+0\s+0\s+kubernetes\.io\/os=linux\s/,
    );
    assert.match(await ok('get', 'sts', '-n', 'shop'), /db\s+0\/1\s/);
    assert.match(await ok('get', 'lease', '-n', 'kube-node-lease'), /node1\s+node1\s/);
    assert.match(await ok('get', 'validatingwebhookconfiguration'), /istio-validator-istio-system\s+1\s/);
    const ds = JSON.parse(await ok('get', 'ds', 'agent', '-n', 'shop', '-o', 'json')) as {
      spec: { updateStrategy: unknown; revisionHistoryLimit: number };
    };
    assert.deepEqual(ds.spec.updateStrategy, {
      type: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: 1, maxSurge: 0 },
    });
    const webhook = JSON.parse(
      await ok('get', 'validatingwebhookconfiguration', 'istio-validator-istio-system', '-o', 'json'),
    ) as {
      webhooks: Record<string, unknown>[];
    };
    const w = webhook.webhooks[0]!;
    assert.deepEqual(
      [
        w['failurePolicy'],
        w['matchPolicy'],
        w['timeoutSeconds'],
        (w['clientConfig'] as { service: { port: number } }).service.port,
      ],
      ['Fail', 'Equivalent', 10, 443],
    );
    const r = await kubectl(
      'patch',
      'sts',
      'db',
      '-n',
      'shop',
      '--type=merge',
      '-p',
      '{"spec":{"serviceName":"other"}}',
    );
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /spec: Forbidden: updates to statefulset spec for fields other than 'replicas'/);
  });

  test('--dry-run=server validates patches and deletes but changes nothing', async () => {
    const before = await ok('get', 'configmap', 'settings', '-n', 'shop', '-o', 'json');
    await ok(
      'patch',
      'configmap',
      'settings',
      '-n',
      'shop',
      '--type',
      'merge',
      '-p',
      '{"data":{"size":"XL"}}',
      '--dry-run=server',
    );
    await ok('delete', 'configmap', 'settings', '-n', 'shop', '--dry-run=server');
    const bad = await kubectl('label', 'configmap', 'settings', '-n', 'shop', 'bad key=x', '--dry-run=server');
    assert.notEqual(bad.status, 0);
    assert.equal(await ok('get', 'configmap', 'settings', '-n', 'shop', '-o', 'json'), before);
  });

  test('delete removes the object and get then says NotFound', async () => {
    await ok('delete', 'configmap', 'settings', '-n', 'shop');
    const r = await kubectl('get', 'configmap', 'settings', '-n', 'shop');
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /configmaps "settings" not found/);
  });

  test('auth can-i and whoami answer for the caller, and for whom it impersonates', async () => {
    assert.equal((await ok('auth', 'can-i', 'list', 'secrets', '-n', 'shop')).trim(), 'yes');
    const zt = await kubectl(
      'auth',
      'can-i',
      'list',
      'secrets',
      '-n',
      'shop',
      '--as',
      'system:serviceaccount:istio-system:ztunnel',
    );
    assert.equal(zt.stdout.trim(), 'no');
    const who = JSON.parse(await ok('auth', 'whoami', '-o', 'json')) as {
      status: { userInfo: { username: string; groups: string[] } };
    };
    assert.equal(who.status.userInfo.username, 'kubernetes-admin');
    assert.ok(who.status.userInfo.groups.includes('system:masters'));
  });

  test('deleting the namespace removes its contents', async () => {
    await ok('delete', 'namespace', 'shop', '--wait=true', '--timeout=20s');
    const r = await kubectl('get', 'deployments', '-A', '-o', 'json');
    assert.equal((JSON.parse(r.stdout) as { items: unknown[] }).items.length, 0);
  });
});
