import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { AddressSchema } from '../src/api/istio/workload/workload_pb.js';
import type { ApiServer } from '../src/apiserver/api-server.js';
import type { Istiod } from '../src/istiod/istiod.js';
import { formatIp } from '../src/lib/ip.js';
import { openStream } from './helpers/ads-stream.js';
import { TEST_DEADLINE_MS } from './helpers/deadlines.js';
import { startApiServer, startIstiod } from './helpers/in-process.js';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { ztunnelToken } from './helpers/ztunnel-token.js';

const ADDRESS = 'type.googleapis.com/istio.workload.Address';
const API_HOST = '127.87.0.10';
const ISTIOD_HOST = '127.87.0.11';
const NS = 'ext';
const SE = { group: 'networking.istio.io', version: 'v1', plural: 'serviceentries', namespace: NS } as const;

interface StatusAddress {
  value: string;
  host: string;
}
interface ServiceEntryObject {
  metadata: { name: string; creationTimestamp?: string };
  status?: { addresses?: StatusAddress[] };
}

const serviceEntry = (name: string, hosts: string[], extra: Record<string, unknown> = {}): object => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'ServiceEntry',
  metadata: { name, namespace: NS },
  spec: { hosts, ports: [{ number: 443, name: 'tls', protocol: 'TLS' }], resolution: 'DNS', ...extra },
});

/**
 * A ztunnel-like delta-ADS subscription to Address resources that keeps what it was sent; `vips` waits until the
 * Service of `name` has addresses `ok` accepts, and returns them.
 */
async function subscribe(
  ist: Istiod,
  kc: k8s.KubeConfig,
): Promise<{ vips: (name: string, ok: (v: string[]) => boolean) => Promise<string[]>; close: () => void }> {
  const s = openStream(ist, await readFile(ist.rootCertPath, 'utf8'), await ztunnelToken(kc), ISTIOD_HOST);
  s.stream.write({
    typeUrl: ADDRESS,
    node: { id: 'ztunnel~127.87.0.30~z.istio-system~istio-system.svc.cluster.local' },
  });
  const services = new Map<string, string[]>();
  const vips = async (name: string, ok: (v: string[]) => boolean): Promise<string[]> => {
    for (;;) {
      const have = services.get(name);
      if (have !== undefined && ok(have)) return have;
      const r = await s.next();
      s.stream.write({ typeUrl: r.typeUrl, responseNonce: r.nonce });
      for (const n of r.removedResources) services.delete(n);
      for (const res of r.resources) {
        const a = anyUnpack(res.resource!, AddressSchema);
        if (a?.type.case === 'service')
          services.set(
            res.name,
            a.type.value.addresses.map((x) => formatIp(x.address)!),
          );
      }
    }
  };
  return { vips, close: () => s.stream.end() };
}

describe(
  'ServiceEntry address auto-allocation by istiod on the Kubernetes API',
  { timeout: 4 * TEST_DEADLINE_MS },
  () => {
    let dir: string;
    let api: ApiServer;
    let kc: k8s.KubeConfig;
    let objects: k8s.CustomObjectsApi;
    let ist: Istiod | undefined;
    const istiodLog: string[] = [];
    const { ok: kubectl } = kubectlWith(() => api.kubeconfigPath);

    const start = (state: string): Promise<Istiod> =>
      startIstiod(undefined, path.join(dir, state), {
        host: ISTIOD_HOST,
        kubeconfig: api.kubeconfigPath,
        log: (l) => void istiodLog.push(l),
      });

    /** The ServiceEntry `name` once its status.addresses satisfy `ok` (a watch from its current state). */
    const statusWhen = async (name: string, ok: (a: StatusAddress[]) => boolean): Promise<StatusAddress[]> => {
      let req: { abort: () => void } | undefined;
      let stopped = false;
      const found = new Promise<StatusAddress[]>((resolve, reject) => {
        void new k8s.Watch(kc)
          .watch(
            `/apis/${SE.group}/${SE.version}/namespaces/${NS}/${SE.plural}`,
            { fieldSelector: `metadata.name=${name}` },
            (_type, o: ServiceEntryObject) => {
              const a = o.status?.addresses ?? [];
              if (ok(a)) resolve(a);
            },
            (e) => {
              if (!stopped) reject(e instanceof Error ? e : new Error(`watch ended: ${String(e)}`));
            },
          )
          .then((r) => (req = r), reject);
      });
      try {
        return await found;
      } finally {
        stopped = true;
        req?.abort();
      }
    };
    const get = async (name: string): Promise<ServiceEntryObject> =>
      (await objects.getNamespacedCustomObject({ ...SE, name })) as ServiceEntryObject;

    before(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'amesh-ip-autoallocate-'));
      api = await startApiServer(path.join(dir, 'api'), { listen: `${API_HOST}:0` });
      kc = new k8s.KubeConfig();
      kc.loadFromFile(api.kubeconfigPath);
      objects = kc.makeApiClient(k8s.CustomObjectsApi);
      const core = kc.makeApiClient(k8s.CoreV1Api);
      for (const name of ['istio-system', NS]) await core.createNamespace({ body: { metadata: { name } } });
      ist = await start('state-1');
    });
    after(async () => {
      await ist?.stop();
      await api?.stop();
      await rm(dir, { recursive: true, force: true });
    });

    test('a ServiceEntry without addresses gets an IPv4 and an IPv6 address per host in status.addresses, and ztunnel gets them as its Service addresses', async () => {
      const z = await subscribe(ist!, kc);
      try {
        await objects.createNamespacedCustomObject({ ...SE, body: serviceEntry('db', ['db.example.com']) });
        const written = await statusWhen('db', (a) => a.length > 0);
        assert.deepEqual(written, [
          { value: '240.240.0.1', host: 'db.example.com' },
          { value: '2001:2::1', host: 'db.example.com' },
        ]);
        assert.deepEqual(await z.vips(`${NS}/db.example.com`, (v) => v.length > 0), ['240.240.0.1', '2001:2::1']);
      } finally {
        z.close();
      }
    });

    test('hosts added get the next free addresses and keep theirs; a wildcard host gets none without DYNAMIC_DNS; an opted-out ServiceEntry has its addresses cleared and served no more', async () => {
      const z = await subscribe(ist!, kc);
      try {
        await objects.createNamespacedCustomObject({
          ...SE,
          body: serviceEntry('multi', ['a.example.com', '*.w.example.com', 'a.example.com']),
        });
        assert.deepEqual(await statusWhen('multi', (a) => a.length > 0), [
          { value: '240.240.0.2', host: 'a.example.com' },
          { value: '2001:2::2', host: 'a.example.com' },
        ]);
        await objects.patchNamespacedCustomObject(
          { ...SE, name: 'multi', body: { spec: { hosts: ['b.example.com', 'a.example.com'] } } },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
        );
        assert.deepEqual(await statusWhen('multi', (a) => a.some((x) => x.host === 'b.example.com')), [
          { value: '240.240.0.3', host: 'b.example.com' },
          { value: '2001:2::3', host: 'b.example.com' },
          { value: '240.240.0.2', host: 'a.example.com' },
          { value: '2001:2::2', host: 'a.example.com' },
        ]);
        assert.deepEqual(await z.vips(`${NS}/b.example.com`, (v) => v.length > 0), ['240.240.0.3', '2001:2::3']);

        await objects.patchNamespacedCustomObject(
          {
            ...SE,
            name: 'multi',
            body: { metadata: { labels: { 'networking.istio.io/enable-autoallocate-ip': 'false' } } },
          },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
        );
        assert.deepEqual(await statusWhen('multi', (a) => a.length === 0), []);
        assert.deepEqual(await z.vips(`${NS}/a.example.com`, (v) => v.length === 0), []);
      } finally {
        z.close();
      }
    });

    test('an allocated address another ServiceEntry was given too is reassigned on the newer one; the older keeps it', async () => {
      await objects.createNamespacedCustomObject({ ...SE, body: serviceEntry('zz-copy', ['copy.example.com']) });
      const own = await statusWhen('zz-copy', (a) => a.length > 0);
      const db = (await get('db')).status!.addresses!;
      // The creation timestamps may fall in the same second: the name then orders them, and db stays the older.
      await objects.patchNamespacedCustomObjectStatus(
        {
          ...SE,
          name: 'zz-copy',
          body: [
            { op: 'test', path: '/status/addresses', value: own },
            { op: 'replace', path: '/status/addresses', value: db.map((a) => ({ ...a, host: 'copy.example.com' })) },
          ],
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
      );
      const reassigned = await statusWhen(
        'zz-copy',
        (a) => a.length > 0 && !a.some((x) => db.some((d) => d.value === x.value)),
      );
      assert.equal(reassigned.length, 2);
      assert.deepEqual((await get('db')).status!.addresses, db, 'the older ServiceEntry keeps its addresses');
      assert.ok(
        istiodLog.some((l) => l.includes('reassigned due to IP address conflict') && l.includes('ext/zz-copy')),
      );
    });

    test(
      'kubectl reads status.addresses of a ServiceEntry it applied without addresses',
      { skip: kubectlSkip },
      async () => {
        const file = path.join(dir, 'api-se.yaml');
        await writeFile(file, JSON.stringify(serviceEntry('kubectl-api', ['api.example.com'])));
        await kubectl('apply', '-f', file);
        await kubectl(
          'wait',
          '-n',
          NS,
          '--for=jsonpath={.status.addresses[1].host}=api.example.com',
          '--timeout=30s',
          'serviceentry/kubectl-api',
        );
        const got = JSON.parse(
          await kubectl('get', '-n', NS, 'serviceentry', 'kubectl-api', '-o', 'json'),
        ) as ServiceEntryObject;
        const values = got.status!.addresses!.map((a) => a.value);
        assert.equal(values.length, 2);
        assert.match(values[0]!, /^240\.240\.\d+\.\d+$/);
        assert.match(values[1]!, /^2001:2::[0-9a-f]+$/);
        const others = (await Promise.all(['db', 'zz-copy'].map(get))).flatMap((o) =>
          o.status!.addresses!.map((a) => a.value),
        );
        assert.ok(!values.some((v) => others.includes(v)), 'no address is handed out twice');
      },
    );

    test('after istiod restarts, it serves the same addresses from status and hands none of them out again', async () => {
      const listed = (await objects.listNamespacedCustomObject({ ...SE })) as { items: ServiceEntryObject[] };
      const before = new Map(listed.items.map((o) => [o.metadata.name, o.status?.addresses ?? []]));
      await ist!.stop();
      ist = undefined;
      ist = await start('state-2');
      const z = await subscribe(ist, kc);
      try {
        assert.deepEqual(
          await z.vips(`${NS}/db.example.com`, (v) => v.length > 0),
          before.get('db')!.map((a) => a.value),
        );
        await objects.createNamespacedCustomObject({ ...SE, body: serviceEntry('later', ['later.example.com']) });
        const later = await statusWhen('later', (a) => a.length > 0);
        const held = [...before.values()].flat().map((a) => a.value);
        assert.ok(
          !later.some((a) => held.includes(a.value)),
          `${JSON.stringify(later)} reuses one of ${held.join(' ')}`,
        );
        assert.deepEqual(
          await z.vips(`${NS}/later.example.com`, (v) => v.length > 0),
          later.map((a) => a.value),
        );
        for (const [name, addresses] of before) assert.deepEqual((await get(name)).status!.addresses, addresses, name);
      } finally {
        z.close();
      }
    });
  },
);
