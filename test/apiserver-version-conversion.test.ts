/**
 * One stored kind served at every version its CRD serves (Istio's networking kinds at v1alpha3, v1beta1 and v1, the
 * Gateway API's at v1beta1 and v1), conversion `None`: driven by kubectl, @kubernetes/client-node and python's
 * kubernetes client against the embedded API server. Objects applied at one version are read, listed and watched at
 * the others; and discovery, tables, selectors, the garbage collector, RBAC and admission webhooks treat the versions
 * as kube-apiserver treats a CRD's.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { startApiServer } from './helpers/in-process.js';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { PYTHON, pythonSkip } from './helpers/python.js';
import { runToExit } from './helpers/run-to-exit.js';
import { selfSignedCertificate } from './helpers/tls-secret.js';

const ISTIO = 'networking.istio.io';

/** As Istio's samples still write them: a v1alpha3 Gateway and a v1beta1 VirtualService, in one file. */
const BOOKINFO = `
apiVersion: networking.istio.io/v1alpha3
kind: Gateway
metadata:
  name: bookinfo-gateway
  namespace: bookinfo
spec:
  selector:
    istio: ingressgateway
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["*"]
---
apiVersion: networking.istio.io/v1beta1
kind: VirtualService
metadata:
  name: bookinfo
  namespace: bookinfo
  labels: {app: bookinfo}
spec:
  hosts: ["*"]
  gateways: [bookinfo-gateway]
  http:
  - match: [{uri: {exact: /productpage}}]
    route: [{destination: {host: productpage, port: {number: 9080}}}]
`;

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; uid: string; resourceVersion: string; labels?: Record<string, string> };
  spec: Record<string, unknown>;
}

describe('one stored kind served at several versions (conversion None)', { skip: kubectlSkip }, () => {
  let dir: string;
  let api: ApiServer;
  const { kubectl, ok } = kubectlWith(() => api.kubeconfigPath);
  const file = async (name: string, text: string): Promise<string> => {
    const f = path.join(dir, name);
    await writeFile(f, text);
    return f;
  };
  const getJson = async <T>(...args: string[]): Promise<T> => JSON.parse(await ok('get', ...args, '-o', 'json')) as T;
  const kubeConfig = (): k8s.KubeConfig => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    return kc;
  };

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-version-conversion-'));
    api = await startApiServer(path.join(dir, 'api'));
    for (const ns of ['bookinfo', 'watched', 'informed', 'py', 'tables', 'gc', 'rbac', 'hooked'])
      await ok('create', 'namespace', ns);
    await ok('apply', '-f', await file('bookinfo.yaml', BOOKINFO));
  });
  after(async () => {
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('discovery lists each served version with its resources, the storage version preferred', async () => {
    const groups = (
      JSON.parse(await ok('get', '--raw', '/apis')) as {
        groups: { name: string; versions: { version: string }[]; preferredVersion: { version: string } }[];
      }
    ).groups;
    const group = (name: string): [string[], string] | undefined => {
      const g = groups.find((x) => x.name === name);
      return g && [g.versions.map((v) => v.version), g.preferredVersion.version];
    };
    assert.deepEqual(group(ISTIO), [['v1', 'v1beta1', 'v1alpha3'], 'v1']);
    assert.deepEqual(group('security.istio.io'), [['v1', 'v1beta1'], 'v1']);
    assert.deepEqual(group('gateway.networking.k8s.io'), [['v1', 'v1beta1'], 'v1']);
    const resources = async (gv: string): Promise<string[]> =>
      (JSON.parse(await ok('get', '--raw', `/apis/${gv}`)) as { resources: { name: string }[] }).resources
        .map((r) => r.name)
        .sort();
    const istioKinds = ['destinationrules', 'gateways', 'serviceentries', 'virtualservices', 'workloadentries'];
    const withStatus = istioKinds.flatMap((p) => [p, `${p}/status`]).sort();
    for (const v of ['v1', 'v1beta1', 'v1alpha3']) assert.deepEqual(await resources(`${ISTIO}/${v}`), withStatus, v);
    assert.deepEqual(await resources('gateway.networking.k8s.io/v1beta1'), [
      'gatewayclasses',
      'gatewayclasses/status',
      'gateways',
      'gateways/status',
      'httproutes',
      'httproutes/status',
      'referencegrants',
    ]);
    const versions = (await ok('api-versions')).split('\n');
    for (const gv of [`${ISTIO}/v1alpha3`, `${ISTIO}/v1beta1`, 'security.istio.io/v1beta1'])
      assert.ok(versions.includes(gv), gv);
  });

  test('a v1alpha3 Gateway and a v1beta1 VirtualService read back at v1 and at the applied version, one object each', async () => {
    const read = async (resource: string, version: string, name: string): Promise<Obj> =>
      getJson<Obj>(`${resource}.${version}.${ISTIO}`, '-n', 'bookinfo', name);
    const [gwApplied, gwV1, vsApplied, vsV1] = await Promise.all([
      read('gateways', 'v1alpha3', 'bookinfo-gateway'),
      read('gateways', 'v1', 'bookinfo-gateway'),
      read('virtualservices', 'v1beta1', 'bookinfo'),
      read('virtualservices', 'v1', 'bookinfo'),
    ]);
    assert.deepEqual(
      [gwApplied.apiVersion, gwV1.apiVersion, vsApplied.apiVersion, vsV1.apiVersion],
      [`${ISTIO}/v1alpha3`, `${ISTIO}/v1`, `${ISTIO}/v1beta1`, `${ISTIO}/v1`],
    );
    assert.equal(gwApplied.metadata.uid, gwV1.metadata.uid);
    assert.equal(vsApplied.metadata.uid, vsV1.metadata.uid);
    assert.deepEqual(vsV1.spec.gateways, ['bookinfo-gateway']);
    assert.deepEqual({ ...gwApplied, apiVersion: undefined }, { ...gwV1, apiVersion: undefined });
    // Applied again, unchanged: kubectl compares at the version of the file.
    assert.match(
      await ok('apply', '-f', path.join(dir, 'bookinfo.yaml')),
      /gateway.networking.istio.io\/bookinfo-gateway unchanged/,
    );
  });

  test('lists at every version see every object, each with the apiVersion of the request path', async () => {
    for (const v of ['v1', 'v1beta1', 'v1alpha3']) {
      const list = await getJson<{ apiVersion: string; kind: string; items: Obj[] }>(
        `gateways.${v}.${ISTIO},virtualservices.${v}.${ISTIO}`,
        '-n',
        'bookinfo',
      );
      assert.deepEqual(
        list.items.map((i) => `${i.apiVersion} ${i.kind}/${i.metadata.name}`),
        [`${ISTIO}/${v} Gateway/bookinfo-gateway`, `${ISTIO}/${v} VirtualService/bookinfo`],
        v,
      );
      const raw = JSON.parse(await ok('get', '--raw', `/apis/${ISTIO}/${v}/virtualservices`)) as {
        apiVersion: string;
        kind: string;
        items: Obj[];
      };
      assert.deepEqual([raw.apiVersion, raw.kind, raw.items.length], [`${ISTIO}/${v}`, 'VirtualServiceList', 1]);
    }
    // kubectl get's table at an older version, with selectors.
    assert.match(await ok('get', `gateways.v1alpha3.${ISTIO}`, '-n', 'bookinfo'), /^NAME\s+AGE\nbookinfo-gateway\s/);
    assert.equal(
      (await ok('get', `virtualservices.v1alpha3.${ISTIO}`, '-A', '-l', 'app=bookinfo', '-o', 'name')).trim(),
      'virtualservice.networking.istio.io/bookinfo',
    );
    assert.equal(
      (
        await ok(
          'get',
          `virtualservices.v1beta1.${ISTIO}`,
          '-A',
          '--field-selector',
          'metadata.name!=bookinfo',
          '-o',
          'name',
        )
      ).trim(),
      '',
    );
  });

  test('a watch at v1alpha3 (kubectl get -w) sees an object created at v1, in v1alpha3', async () => {
    await ok(
      'apply',
      '-f',
      await file(
        'seed.yaml',
        `apiVersion: networking.istio.io/v1beta1\nkind: Gateway\nmetadata: {name: seed, namespace: watched}\nspec: {selector: {istio: ingressgateway}}\n`,
      ),
    );
    const watcher = spawn(
      'kubectl',
      [
        '--kubeconfig',
        api.kubeconfigPath,
        'get',
        `gateways.v1alpha3.${ISTIO}`,
        '-n',
        'watched',
        '--watch',
        '--output-watch-events',
        '-o',
        'jsonpath={.type} {.object.apiVersion} {.object.metadata.name}{"\\n"}',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    let wake: () => void = () => {};
    watcher.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      wake();
    });
    watcher.stderr.on('data', (d: Buffer) => (err += d.toString()));
    watcher.on('exit', () => wake());
    /** Resolves once kubectl has printed `line`, from its first line on. */
    const printed = async (line: string): Promise<void> => {
      while (!out.split('\n').includes(line)) {
        if (watcher.exitCode !== null) throw new Error(`kubectl exited before printing "${line}": ${out}${err}`);
        await new Promise<void>((resolve) => (wake = resolve));
      }
    };
    try {
      // The list kubectl starts from: the watch after it misses nothing written from now on.
      await printed(`ADDED ${ISTIO}/v1alpha3 seed`);
      await ok(
        'create',
        '-f',
        await file(
          'made-at-v1.yaml',
          `apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: made-at-v1, namespace: watched}\nspec: {selector: {istio: ingressgateway}}\n`,
        ),
      );
      await printed(`ADDED ${ISTIO}/v1alpha3 made-at-v1`);
      await ok('delete', `gateways.v1beta1.${ISTIO}`, '-n', 'watched', 'made-at-v1');
      await printed(`DELETED ${ISTIO}/v1alpha3 made-at-v1`);
    } finally {
      watcher.kill();
      if (watcher.exitCode === null) await once(watcher, 'exit');
    }
  });

  test('a client-node informer on the storage version path sees objects written at older versions, at v1', async () => {
    const kc = kubeConfig();
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const informer = k8s.makeInformer<Obj & k8s.KubernetesObject>(
      kc,
      `/apis/${ISTIO}/v1/namespaces/informed/virtualservices`,
      () =>
        custom.listNamespacedCustomObject({
          group: ISTIO,
          version: 'v1',
          namespace: 'informed',
          plural: 'virtualservices',
        }) as Promise<k8s.KubernetesListObject<Obj & k8s.KubernetesObject>>,
    );
    const seen: string[] = [];
    let wake: () => void = () => {};
    const record =
      (verb: string) =>
      (o: Obj): void => {
        seen.push(`${verb} ${o.apiVersion} ${o.metadata.name} ${JSON.stringify(o.spec.hosts)}`);
        wake();
      };
    const until = async (entry: string): Promise<void> => {
      while (!seen.includes(entry)) await new Promise<void>((r) => (wake = r));
    };
    informer.on('add', record('add'));
    informer.on('update', record('update'));
    const started = new Promise<void>((resolve) => informer.on('connect', () => resolve()));
    await informer.start();
    try {
      await started;
      const vs = (version: string, hosts: string): string =>
        `apiVersion: networking.istio.io/${version}\nkind: VirtualService\nmetadata: {name: reviews, namespace: informed}\n` +
        `spec: {hosts: [${hosts}], http: [{route: [{destination: {host: reviews}}]}]}\n`;
      await ok('apply', '-f', await file('informed.yaml', vs('v1alpha3', 'reviews')));
      await until(`add ${ISTIO}/v1 reviews ["reviews"]`);
      await ok('apply', '-f', await file('informed.yaml', vs('v1beta1', 'reviews.informed.svc.cluster.local')));
      await until(`update ${ISTIO}/v1 reviews ["reviews.informed.svc.cluster.local"]`);
    } finally {
      await informer.stop();
    }
  });

  test(
    "python's kubernetes client: created at v1alpha3, read at v1, listed at v1beta1, watched at v1alpha3",
    { skip: pythonSkip('kubernetes', 'python3-kubernetes') },
    async () => {
      const script = `
import json, sys
from kubernetes import client, config, watch
config.load_kube_config(sys.argv[1])
api = client.CustomObjectsApi()
g, ns, plural = 'networking.istio.io', 'py', 'destinationrules'
body = {'apiVersion': g + '/v1alpha3', 'kind': 'DestinationRule', 'metadata': {'name': 'reviews'},
        'spec': {'host': 'reviews', 'subsets': [{'name': 'v1', 'labels': {'version': 'v1'}}]}}
created = api.create_namespaced_custom_object(g, 'v1alpha3', ns, plural, body)
got = api.get_namespaced_custom_object(g, 'v1', ns, plural, 'reviews')
listed = api.list_namespaced_custom_object(g, 'v1beta1', ns, plural)
api.patch_namespaced_custom_object(g, 'v1', ns, plural, 'reviews', {'spec': {'host': 'reviews.py.svc.cluster.local'}})
event = None
for e in watch.Watch().stream(api.list_namespaced_custom_object, g, 'v1alpha3', ns, plural,
                              resource_version=created['metadata']['resourceVersion'], timeout_seconds=30):
    event = [e['type'], e['object']['apiVersion'], e['object']['spec']['host']]
    break
print(json.dumps({
    'created': created['apiVersion'],
    'got': [got['apiVersion'], got['metadata']['uid'] == created['metadata']['uid']],
    'listed': [listed['apiVersion'], [i['apiVersion'] for i in listed['items']]],
    'event': event,
}))
`;
      const r = await runToExit(PYTHON, ['-c', script, api.kubeconfigPath], 60_000);
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), {
        created: `${ISTIO}/v1alpha3`,
        got: [`${ISTIO}/v1`, true],
        listed: [`${ISTIO}/v1beta1`, [`${ISTIO}/v1beta1`]],
        event: ['MODIFIED', `${ISTIO}/v1alpha3`, 'reviews.py.svc.cluster.local'],
      });
    },
  );

  test("requests name their version: a body at another version is refused, strict errors and Table rows name the request's", async () => {
    const created = await kubectl(
      'create',
      '--raw',
      `/apis/${ISTIO}/v1alpha3/namespaces/tables/virtualservices`,
      '-f',
      await file(
        'mismatch.json',
        JSON.stringify({ apiVersion: `${ISTIO}/v1beta1`, kind: 'VirtualService', metadata: { name: 'x' }, spec: {} }),
      ),
    );
    assert.match(
      created.stderr,
      /the API version in the data \(networking.istio.io\/v1beta1\) does not match the expected API version \(networking.istio.io\/v1alpha3\)/,
    );
    const strict = await kubectl(
      'apply',
      '-f',
      await file(
        'unknown.yaml',
        'apiVersion: networking.istio.io/v1alpha3\nkind: VirtualService\nmetadata: {name: x, namespace: tables}\nspec: {hosts: [x], foo: 1}\n',
      ),
    );
    assert.match(
      strict.stderr,
      /VirtualService in version "v1alpha3" cannot be handled as a VirtualService: strict decoding error: unknown field "spec.foo"/,
    );
    // The Table kubectl get asks for, with whole objects in its rows, as a client of v1beta1 reads it.
    const kc = kubeConfig();
    const opts: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(opts);
    const table = await new Promise<{ rows: { object: Obj }[] }>((resolve, reject) => {
      const url = new URL(`${kc.getCurrentCluster()!.server}/apis/${ISTIO}/v1beta1/namespaces/bookinfo/gateways`);
      url.searchParams.set('includeObject', 'Object');
      https
        .get(
          url,
          {
            ...opts,
            headers: {
              ...(opts.headers as Record<string, string>),
              accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
            },
          },
          (res) => {
            let body = '';
            res.on('data', (d: Buffer) => (body += d.toString()));
            res.on('end', () => resolve(JSON.parse(body) as { rows: { object: Obj }[] }));
          },
        )
        .on('error', reject);
    });
    assert.deepEqual(
      table.rows.map((r) => r.object.apiVersion),
      [`${ISTIO}/v1beta1`],
    );
  });

  test('the garbage collector follows an owner named at an older version, deleted at another', async () => {
    await ok(
      'apply',
      '-f',
      await file(
        'owner.yaml',
        'apiVersion: networking.istio.io/v1alpha3\nkind: Gateway\nmetadata: {name: owner, namespace: gc}\nspec: {selector: {istio: ingressgateway}}\n',
      ),
    );
    const owner = await getJson<Obj>(`gateways.v1alpha3.${ISTIO}`, '-n', 'gc', 'owner');
    await ok(
      'create',
      '-f',
      await file(
        'dependent.json',
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: {
            name: 'dependent',
            namespace: 'gc',
            ownerReferences: [
              { apiVersion: `${ISTIO}/v1alpha3`, kind: 'Gateway', name: 'owner', uid: owner.metadata.uid },
            ],
          },
        }),
      ),
    );
    await ok('delete', `gateways.v1beta1.${ISTIO}`, '-n', 'gc', 'owner');
    await ok('wait', '--for=delete', 'configmap/dependent', '-n', 'gc', '--timeout=30s');
  });

  test('RBAC rules name groups and resources: a Role on virtualservices grants them at every version', async () => {
    await ok('create', 'serviceaccount', 'reader', '-n', 'rbac');
    await ok(
      'create',
      'role',
      'vs-reader',
      '-n',
      'rbac',
      `--verb=get,list,watch`,
      `--resource=virtualservices.${ISTIO}`,
    );
    await ok('create', 'rolebinding', 'vs-reader', '-n', 'rbac', '--role=vs-reader', '--serviceaccount=rbac:reader');
    const as = ['--as', 'system:serviceaccount:rbac:reader', '-n', 'rbac'];
    for (const v of ['v1', 'v1beta1', 'v1alpha3']) await ok('get', `virtualservices.${v}.${ISTIO}`, ...as);
    const other = await kubectl('get', `gateways.v1alpha3.${ISTIO}`, ...as);
    assert.match(
      other.stderr,
      /cannot list resource "gateways" in API group "networking.istio.io" in the namespace "rbac"/,
    );
    const canCreate = await kubectl('auth', 'can-i', 'create', `virtualservices.v1alpha3.${ISTIO}`, ...as);
    assert.deepEqual([canCreate.status, canCreate.stdout.trim()], [1, 'no']);
  });

  test("an admission webhook's rules match the request's version, and it is sent the object at the version it names", async () => {
    const { cert, key } = selfSignedCertificate(dir, 'hook', ['IP:127.0.0.1']);
    const reviews: { path: string; request: Record<string, { version?: string; apiVersion?: string }> }[] = [];
    const server = https.createServer({ key: await readFile(key), cert: await readFile(cert) }, (req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const review = JSON.parse(body) as {
          request: Record<string, { version?: string; apiVersion?: string }> & { uid: string };
        };
        reviews.push({ path: new URL(req.url ?? '/', 'https://hooks').pathname, request: review.request });
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            apiVersion: 'admission.k8s.io/v1',
            kind: 'AdmissionReview',
            response: { uid: review.request.uid, allowed: true },
          }),
        );
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const base = `https://127.0.0.1:${String((server.address() as AddressInfo).port)}`;
      const caBundle = (await readFile(cert)).toString('base64');
      const webhook = (name: string, matchPolicy: string, apiVersions: string[]): object => ({
        name: `${name}.hooks.test`,
        matchPolicy,
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'hooked' } },
        rules: [{ apiGroups: [ISTIO], apiVersions, operations: ['CREATE', 'UPDATE'], resources: ['virtualservices'] }],
        clientConfig: { url: `${base}/${name}`, caBundle },
      });
      await ok(
        'create',
        '-f',
        await file(
          'hooks.json',
          JSON.stringify({
            apiVersion: 'admissionregistration.k8s.io/v1',
            kind: 'ValidatingWebhookConfiguration',
            metadata: { name: 'versions' },
            webhooks: [webhook('exact', 'Exact', ['v1alpha3']), webhook('equivalent', 'Equivalent', ['v1beta1'])],
          }),
        ),
      );
      const vs = (version: string, name: string): string =>
        `apiVersion: networking.istio.io/${version}\nkind: VirtualService\nmetadata: {name: ${name}, namespace: hooked}\nspec: {hosts: [${name}]}\n`;
      // At v1 only the Equivalent webhook is called, sent the object at v1beta1; the request's kind stays v1.
      await ok('create', '-f', await file('at-v1.yaml', vs('v1', 'at-v1')));
      assert.deepEqual(
        reviews.map((r) => [
          r.path,
          r.request.kind?.version,
          r.request.requestKind?.version,
          r.request.object?.apiVersion,
        ]),
        [['/equivalent', 'v1beta1', 'v1', `${ISTIO}/v1beta1`]],
      );
      reviews.length = 0;
      // At v1alpha3 the Exact webhook sees it as written; the Equivalent one at v1beta1, told it was v1alpha3.
      await ok('create', '-f', await file('at-v1alpha3.yaml', vs('v1alpha3', 'at-v1alpha3')));
      assert.deepEqual(
        reviews
          .map((r) => [r.path, r.request.kind?.version, r.request.requestKind?.version, r.request.object?.apiVersion])
          .sort(),
        [
          ['/equivalent', 'v1beta1', 'v1alpha3', `${ISTIO}/v1beta1`],
          ['/exact', 'v1alpha3', 'v1alpha3', `${ISTIO}/v1alpha3`],
        ],
      );
      assert.equal(
        (await getJson<Obj>(`virtualservices.v1.${ISTIO}`, '-n', 'hooked', 'at-v1alpha3')).apiVersion,
        `${ISTIO}/v1`,
      );
    } finally {
      await kubectl('delete', 'validatingwebhookconfiguration', 'versions');
      server.close();
    }
  });
});
