import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { startApiServer } from './helpers/in-process.js';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';

/** Istio's own networking kinds at an older served version, as Istio's docs and samples still write them. */
const GATEWAY_V1ALPHA3 = `
apiVersion: networking.istio.io/v1alpha3
kind: Gateway
metadata: {name: bookinfo-gateway, namespace: shop}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]
`;

describe('networking.istio.io served at v1alpha3, v1beta1 and v1 as one stored kind', { skip: kubectlSkip }, () => {
  let dir: string;
  let api: ApiServer;
  const { ok } = kubectlWith(() => api.kubeconfigPath);

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-versions-'));
    api = await startApiServer(path.join(dir, 'api'));
    await ok('create', 'namespace', 'shop');
  });
  after(async () => {
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('discovery lists the three versions, v1 preferred', async () => {
    const group = JSON.parse(await ok('get', '--raw', '/apis/networking.istio.io')) as {
      versions: { version: string }[];
      preferredVersion: { version: string };
    };
    assert.deepEqual(group.versions.map((v) => v.version).sort(), ['v1', 'v1alpha3', 'v1beta1']);
    assert.equal(group.preferredVersion.version, 'v1');
  });

  test('kubectl apply at v1alpha3; the object reads at each version with that apiVersion, one object (one uid)', async () => {
    await writeFile(path.join(dir, 'gw.yaml'), GATEWAY_V1ALPHA3);
    assert.match(
      await ok('apply', '-f', path.join(dir, 'gw.yaml')),
      /gateway.networking.istio.io\/bookinfo-gateway created/,
    );
    const at = async (v: string): Promise<{ apiVersion: string; metadata: { uid: string } }> =>
      JSON.parse(
        await ok('get', `gateways.${v}.networking.istio.io`, '-n', 'shop', 'bookinfo-gateway', '-o', 'json'),
      ) as {
        apiVersion: string;
        metadata: { uid: string };
      };
    const [a, b, c] = await Promise.all([at('v1alpha3'), at('v1beta1'), at('v1')]);
    assert.deepEqual(
      [a.apiVersion, b.apiVersion, c.apiVersion],
      ['networking.istio.io/v1alpha3', 'networking.istio.io/v1beta1', 'networking.istio.io/v1'],
    );
    assert.equal(a.metadata.uid, c.metadata.uid);
    // Applied again at v1beta1 with a change: the same object is configured, and v1alpha3 reads the change.
    await writeFile(
      path.join(dir, 'gw.yaml'),
      GATEWAY_V1ALPHA3.replace('v1alpha3', 'v1beta1').replace('"*"', 'bookinfo.example.com'),
    );
    assert.match(await ok('apply', '-f', path.join(dir, 'gw.yaml')), /configured/);
    const list = JSON.parse(await ok('get', 'gateways.v1alpha3.networking.istio.io', '-n', 'shop', '-o', 'json')) as {
      items: { apiVersion: string; spec: { servers: { hosts: string[] }[] } }[];
    };
    assert.equal(list.items.length, 1);
    assert.equal(list.items[0]!.apiVersion, 'networking.istio.io/v1alpha3');
    assert.deepEqual(list.items[0]!.spec.servers[0]!.hosts, ['bookinfo.example.com']);
  });

  test('a watch at v1alpha3 gets events in v1alpha3 for an object written at v1', async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    const seen = new Promise<{ type: string; apiVersion: string }>((resolve, reject) => {
      void new k8s.Watch(kc)
        .watch(
          '/apis/networking.istio.io/v1alpha3/namespaces/shop/virtualservices',
          { resourceVersion: '0' },
          (type: string, obj: { apiVersion: string }) => resolve({ type, apiVersion: obj.apiVersion }),
          (e: unknown) => (e === null || e === undefined ? undefined : reject(e as Error)),
        )
        .then((w) => after(() => w.abort()));
    });
    await writeFile(
      path.join(dir, 'vs.yaml'),
      `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews, namespace: shop}
spec: {hosts: [reviews], http: [{route: [{destination: {host: reviews}}]}]}
`,
    );
    await ok('apply', '-f', path.join(dir, 'vs.yaml'));
    assert.deepEqual(await seen, { type: 'ADDED', apiVersion: 'networking.istio.io/v1alpha3' });
  });
});
