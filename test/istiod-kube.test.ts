import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { toJson, type DescMessage } from '@bufbuild/protobuf';
import { parseAllDocuments } from 'yaml';
import type { DeltaDiscoveryResponse } from '../src/api/envoy/service/discovery/v3/discovery_pb.js';
import { AddressSchema } from '../src/api/istio/workload/workload_pb.js';
import { AuthorizationSchema } from '../src/api/istio/security/authorization_pb.js';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { writePluginCaDir } from '../src/lib/pki/plugin-ca-dir.js';
import type { Istiod } from '../src/istiod/istiod.js';
import { startApiServer, startIstiod } from './helpers/in-process.js';
import { openStream } from './helpers/ads-stream.js';
import { freePorts } from './helpers/free-port.js';
import { ztunnelToken } from './helpers/ztunnel-token.js';

const ADDRESS = 'type.googleapis.com/istio.workload.Address';
const AUTHZ = 'type.googleapis.com/istio.security.Authorization';
const API_HOST = '127.83.0.20';
const KUBE_ISTIOD = '127.83.0.21';
const DIR_ISTIOD = '127.83.0.22';
const LATE_ISTIOD = '127.83.0.23';

/**
 * Beyond examples/local-mesh: a pod of a Deployment (through its ReplicaSet) and one of a CronJob (through its Job),
 * whose workload names come from their owners; a ServiceEntry with an endpoint; a WorkloadEntry; and an
 * AuthorizationPolicy that fails validation with no good version, which stands in as deny-all either way.
 * Owner uids are placeholders: through the API they are replaced by the owners' real uids.
 */
const EXTRA = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: backend}
spec:
  replicas: 0
  selector: {matchLabels: {app: api}}
  template: {metadata: {labels: {app: api}}, spec: {containers: [{name: api, image: amesh-echo}]}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: api-7d9f8b6c5d
  namespace: backend
  labels: {app: api, pod-template-hash: 7d9f8b6c5d}
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: api, uid: placeholder, controller: true}]
spec:
  replicas: 0
  selector: {matchLabels: {app: api, pod-template-hash: 7d9f8b6c5d}}
  template: {metadata: {labels: {app: api, pod-template-hash: 7d9f8b6c5d}}, spec: {containers: [{name: api, image: amesh-echo}]}}
---
apiVersion: v1
kind: Pod
metadata:
  name: api-7d9f8b6c5d-x2x4z
  generateName: api-7d9f8b6c5d-
  namespace: backend
  labels: {app: api, pod-template-hash: 7d9f8b6c5d}
  annotations: {ambient.istio.io/redirection: enabled}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: api-7d9f8b6c5d, uid: placeholder, controller: true}]
spec: {serviceAccountName: echo, nodeName: node2, containers: [{name: api, image: amesh-echo}]}
status: {phase: Running, podIP: 127.83.1.4}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: report, namespace: backend}
spec:
  schedule: "*/5 * * * *"
  jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: report, image: amesh-echo}]}}}}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: report-28901234
  namespace: backend
  ownerReferences: [{apiVersion: batch/v1, kind: CronJob, name: report, uid: placeholder, controller: true}]
spec: {template: {spec: {restartPolicy: Never, containers: [{name: report, image: amesh-echo}]}}}
---
apiVersion: v1
kind: Pod
metadata:
  name: report-28901234-abcde
  generateName: report-28901234-
  namespace: backend
  labels: {app: report}
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: report-28901234, uid: placeholder, controller: true}]
spec: {nodeName: node1, restartPolicy: Never, containers: [{name: report, image: amesh-echo}]}
status: {phase: Running, podIP: 127.83.1.5}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: external-db, namespace: backend}
spec:
  hosts: [db.example.internal]
  addresses: [10.200.0.10]
  ports: [{number: 5432, name: tcp, protocol: TCP}]
  resolution: STATIC
  endpoints: [{address: 127.83.1.20}]
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm-1, namespace: backend, labels: {app: echo}}
spec: {address: 127.83.1.30, serviceAccount: echo}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: broken, namespace: frontend}
spec: {selector: {matchLabels: {app: "not a label!"}}}
`;

/** Resources both sources must serve, with what each one's derivation depends on. */
const TABLE: readonly { name: string; type: string; check: (json: Record<string, unknown>) => void }[] = [
  {
    name: 'Kubernetes//Pod/frontend/web-0',
    type: ADDRESS,
    check: (j) => assert.equal((j['workload'] as Record<string, unknown>)['workloadName'], 'web-0'),
  },
  {
    name: 'Kubernetes//Pod/backend/api-7d9f8b6c5d-x2x4z',
    type: ADDRESS,
    check: (j) => assert.equal((j['workload'] as Record<string, unknown>)['workloadName'], 'api'),
  },
  {
    name: 'Kubernetes//Pod/backend/report-28901234-abcde',
    type: ADDRESS,
    check: (j) => assert.equal((j['workload'] as Record<string, unknown>)['workloadName'], 'report'),
  },
  {
    name: 'Kubernetes//Pod/backend/echo-0',
    type: ADDRESS,
    check: (j) =>
      assert.deepEqual((j['workload'] as Record<string, unknown>)['locality'], { region: 'local', zone: 'local-b' }),
  },
  { name: 'backend/echo.backend.svc.cluster.local', type: ADDRESS, check: (j) => assert.ok('service' in j) },
  { name: 'backend/db.example.internal', type: ADDRESS, check: (j) => assert.ok('service' in j) },
  {
    name: 'Kubernetes/networking.istio.io/ServiceEntry/backend/external-db/127.83.1.20',
    type: ADDRESS,
    check: (j) => assert.ok('workload' in j),
  },
  {
    name: 'Kubernetes/networking.istio.io/WorkloadEntry/backend/vm-1',
    type: ADDRESS,
    check: (j) => assert.ok('workload' in j),
  },
  { name: 'backend/allow-web', type: AUTHZ, check: (j) => assert.equal(j['action'], undefined) },
  { name: 'frontend/broken', type: AUTHZ, check: (j) => assert.equal(j['action'], 'DENY') },
  { name: 'istio-system/istio_converted_static_strict', type: AUTHZ, check: (j) => assert.equal(j['action'], 'DENY') },
];

type Served = Record<string, Record<string, unknown>>;

function decode(r: DeltaDiscoveryResponse, schema: DescMessage): Served {
  return Object.fromEntries(
    r.resources.map((x) => [x.name, toJson(schema, anyUnpack(x.resource!, schema)!) as Record<string, unknown>]),
  );
}

/** A ztunnel-like delta-ADS client: subscribes to both types, ACKs everything, and hands each response over. */
async function subscribe(
  ist: Istiod,
  host: string,
  kc?: k8s.KubeConfig,
): Promise<{ initial: Record<string, Served>; next: () => Promise<DeltaDiscoveryResponse>; close: () => void }> {
  const root = await readFile(ist.rootCertPath, 'utf8');
  // An istiod on the API trusts what TokenReview says (its own issuer's tokens no longer), as Istio's does.
  const token =
    kc === undefined
      ? await ist.issuer.issue({
          namespace: 'istio-system',
          serviceAccount: 'ztunnel',
          audience: 'istio-ca',
          node: 'node1',
        })
      : await ztunnelToken(kc);
  return subscribeWith(ist, host, root, token);
}

async function subscribeWith(
  ist: Istiod,
  host: string,
  root: string,
  token: string,
): Promise<{ initial: Record<string, Served>; next: () => Promise<DeltaDiscoveryResponse>; close: () => void }> {
  const s = openStream(ist, root, token, host);
  const next = async (): Promise<DeltaDiscoveryResponse> => {
    const r = await s.next();
    s.stream.write({ typeUrl: r.typeUrl, responseNonce: r.nonce });
    return r;
  };
  s.stream.write({
    typeUrl: ADDRESS,
    node: { id: 'ztunnel~127.83.0.30~z.istio-system~istio-system.svc.cluster.local' },
  });
  const addresses = await next();
  s.stream.write({ typeUrl: AUTHZ });
  const authz = await next();
  return {
    initial: { [ADDRESS]: decode(addresses, AddressSchema), [AUTHZ]: decode(authz, AuthorizationSchema) },
    next,
    close: () => s.stream.end(),
  };
}

const docs = (text: string): Record<string, unknown>[] =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as Record<string, unknown> | null)
    .filter((o): o is Record<string, unknown> => o !== null);
type Meta = { name: string; namespace?: string; ownerReferences?: { kind: string; name: string; uid: string }[] };

/** Creates `objects` through the API as a user would: namespaces first, owners before dependents, pod status through the status subresource. */
async function createAll(kc: k8s.KubeConfig, objects: readonly Record<string, unknown>[]): Promise<void> {
  const client = k8s.KubernetesObjectApi.makeApiClient(kc);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const uids = new Map<string, string>();
  const ordered = [
    ...objects.filter((o) => o['kind'] === 'Namespace'),
    ...objects.filter((o) => o['kind'] !== 'Namespace'),
  ];
  for (const o of ordered) {
    const meta = o['metadata'] as Meta;
    for (const ref of meta.ownerReferences ?? []) ref.uid = uids.get(`${ref.kind}/${ref.name}`)!;
    const created: k8s.V1Pod = await client.create(o);
    uids.set(`${String(o['kind'])}/${meta.name}`, created.metadata!.uid!);
    if (o['kind'] !== 'Pod') continue;
    created.status = o['status'] as k8s.V1PodStatus;
    await core.replaceNamespacedPodStatus({ name: meta.name, namespace: meta.namespace!, body: created });
  }
}

describe('istiod on the Kubernetes API', () => {
  let dir: string;
  let api: ApiServer;
  let apiListen: string;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let fromApi: Istiod | undefined;
  const istiodLog: string[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-istiod-kube-'));
    const [port] = await freePorts(API_HOST, 1);
    apiListen = `${API_HOST}:${String(port)}`;
    api = await startApiServer(path.join(dir, 'api'), { listen: apiListen });
    kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    core = kc.makeApiClient(k8s.CoreV1Api);
  });
  after(async () => {
    await fromApi?.stop();
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('the same objects through the manifest directory and through the API serve the same resources', async () => {
    const config = path.join(dir, 'config');
    await cp(path.resolve('examples/local-mesh'), config, { recursive: true });
    await writeFile(path.join(config, 'extra.yaml'), EXTRA);
    const objects: Record<string, unknown>[] = [];
    for (const f of (await readdir(config)).sort()) objects.push(...docs(await readFile(path.join(config, f), 'utf8')));
    await createAll(kc, objects);

    const fromDir = await startIstiod(config, path.join(dir, 'dir-state'), { host: DIR_ISTIOD });
    // Started once the API holds everything, so readiness must wait on the informers' first lists.
    fromApi = await startIstiod(undefined, path.join(dir, 'kube-state'), {
      host: KUBE_ISTIOD,
      kubeconfig: api.kubeconfigPath,
      log: (l) => void istiodLog.push(l),
    });
    try {
      const a = await subscribe(fromDir, DIR_ISTIOD);
      const b = await subscribe(fromApi, KUBE_ISTIOD, kc);
      a.close();
      b.close();
      for (const row of TABLE) {
        const served = b.initial[row.type]![row.name];
        assert.ok(served !== undefined, `${row.name} not served from the API`);
        row.check(served);
      }
      // Every cluster has the API server's own `kubernetes` Service (the directory's embedded one too), whose
      // target port is where that API server listens, backed by the endpoint of its EndpointSlice.
      const slice = 'Kubernetes/discovery.k8s.io/EndpointSlice/default/kubernetes/';
      const withoutKubernetes = (served: Record<string, Served>): Record<string, Served> => {
        const { 'default/kubernetes.default.svc.cluster.local': kubernetes, ...rest } = served[ADDRESS]!;
        assert.ok(kubernetes !== undefined, 'the kubernetes Service is served');
        const endpoints = Object.keys(rest).filter((k) => k.startsWith(slice));
        assert.equal(endpoints.length, 1, 'the API server is the one endpoint of the kubernetes Service');
        return { ...served, [ADDRESS]: Object.fromEntries(Object.entries(rest).filter(([k]) => !k.startsWith(slice))) };
      };
      const apiEndpoint = b.initial[ADDRESS]![`${slice}${API_HOST}`]?.['workload'] as Record<string, unknown>;
      assert.deepEqual(
        [apiEndpoint?.['networkMode'], apiEndpoint?.['services']],
        [
          'HOST_NETWORK',
          {
            'default/kubernetes.default.svc.cluster.local': {
              ports: [{ servicePort: 443, targetPort: Number(apiListen.split(':')[1]) }],
            },
          },
        ],
        "ztunnel reaches the API through the kubernetes Service's EndpointSlice",
      );
      assert.deepEqual(withoutKubernetes(b.initial), withoutKubernetes(a.initial));
      assert.ok(
        istiodLog.some((l) =>
          l.includes('AuthorizationPolicy frontend/broken: spec.selector.matchLabels.app: label value'),
        ),
        'the refused object is named by namespace/name',
      );
    } finally {
      await fromDir.stop();
    }
  });

  test('an object edited or deleted through the API reaches a subscribed client as an incremental update', async () => {
    const ready = await fetch(`http://${KUBE_ISTIOD}:${String(fromApi!.ports.monitoring)}/ready`);
    assert.equal(ready.status, 200);
    const s = await subscribe(fromApi!, KUBE_ISTIOD, kc);
    try {
      await core.patchNamespacedPod(
        { name: 'echo-1', namespace: 'backend', body: { metadata: { labels: { version: 'v2' } } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
      const edited = await s.next();
      assert.deepEqual(
        edited.resources.map((r) => r.name),
        ['Kubernetes//Pod/backend/echo-1'],
      );
      assert.equal(
        (decode(edited, AddressSchema)['Kubernetes//Pod/backend/echo-1']!['workload'] as Record<string, unknown>)[
          'canonicalRevision'
        ],
        'v2',
      );

      await core.deleteNamespacedPod({ name: 'web-0', namespace: 'frontend', gracePeriodSeconds: 0 });
      const deleted = await s.next();
      assert.deepEqual(deleted.resources, []);
      assert.deepEqual(deleted.removedResources, ['Kubernetes//Pod/frontend/web-0']);

      // A refused edit keeps the last good policy: the next push is the valid edit after it, nothing in between.
      const patchPolicy = (spec: object): Promise<unknown> =>
        kc.makeApiClient(k8s.CustomObjectsApi).patchNamespacedCustomObject(
          {
            group: 'security.istio.io',
            version: 'v1',
            plural: 'authorizationpolicies',
            namespace: 'backend',
            name: 'allow-web',
            body: { spec },
          },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
        );
      // The API's schema takes the label value; istiod refuses it.
      await patchPolicy({ selector: { matchLabels: { app: 'not a label!' } } });
      await patchPolicy({ action: 'DENY', selector: null });
      const policy = await s.next();
      assert.equal(policy.typeUrl, AUTHZ);
      assert.deepEqual(decode(policy, AuthorizationSchema)['backend/allow-web']?.['action'], 'DENY');
      assert.ok(
        istiodLog.some((l) => l.includes('AuthorizationPolicy backend/allow-web: spec.selector.matchLabels.app')),
      );
    } finally {
      s.close();
    }
  });

  test('after the API server restarts, the informers resume and istiod serves what changed meanwhile; an istiod that started meanwhile serves nothing before it has synced', async () => {
    const s = await subscribe(fromApi!, KUBE_ISTIOD, kc);
    let late: Istiod | undefined;
    try {
      await api.stop();
      // With a plug-in CA: one from istio-ca-secret would wait for the API.
      await writePluginCaDir(path.join(dir, 'late-cacerts'));
      late = await startIstiod(undefined, path.join(dir, 'late-state'), {
        host: LATE_ISTIOD,
        kubeconfig: api.kubeconfigPath,
        caDir: path.join(dir, 'late-cacerts'),
      });
      assert.equal((await fetch(`http://${LATE_ISTIOD}:${String(late.ports.monitoring)}/ready`)).status, 503);
      // Changes istiod cannot see: made against the same data by another server instance.
      const offline = await startApiServer(path.join(dir, 'api'));
      const okc = new k8s.KubeConfig();
      okc.loadFromFile(offline.kubeconfigPath);
      const ocore = okc.makeApiClient(k8s.CoreV1Api);
      await ocore.deleteNamespacedPod({ name: 'echo-0', namespace: 'backend', gracePeriodSeconds: 0 });
      await offline.stop();
      api = await startApiServer(path.join(dir, 'api'), { listen: apiListen });
      const r = await s.next();
      assert.deepEqual(r.removedResources, ['Kubernetes//Pod/backend/echo-0']);
      assert.ok(istiodLog.some((l) => l.includes('watch failed; restarting')));
      // Callers are authenticated by TokenReview, so the late istiod answers once the API is back: its first
      // answer must be the whole mesh, not what it had before its informers synced.
      const l = await subscribe(late, LATE_ISTIOD, kc);
      l.close();
      const current = await subscribe(fromApi!, KUBE_ISTIOD, kc);
      current.close();
      assert.deepEqual(l.initial, current.initial);
      assert.equal((await fetch(`http://${LATE_ISTIOD}:${String(late.ports.monitoring)}/ready`)).status, 200);
    } finally {
      s.close();
      await late?.stop();
    }
  });
});
