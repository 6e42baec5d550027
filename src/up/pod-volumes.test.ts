import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, watch } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { V1ConfigMap, V1Pod, V1Secret, V1Volume } from '@kubernetes/client-node';
import { ManualClock } from '../../test/helpers/manual-clock.js';
import { silentLogs } from '../../test/helpers/captured-logs.js';
import { NodeFilesystem } from './node-filesystem.js';
import { PodVolumes, type TokenRequestFor } from './pod-volumes.js';

const CM: V1ConfigMap = { metadata: { name: 'cfg', namespace: 'ns' }, data: { 'app.yaml': 'a: 1', other: 'x' } };
const SECRET: V1Secret = {
  metadata: { name: 'creds', namespace: 'ns' },
  data: { password: Buffer.from('s3cr3t').toString('base64') },
};

async function volumesFor(
  t: { after: (fn: () => Promise<void>) => void },
  volumes: V1Volume[],
  clock = new ManualClock(0),
) {
  const dir = await mkdtemp(path.join(tmpdir(), 'vols-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const node = new NodeFilesystem(path.join(dir, 'node-root'));
  const configMaps = new Map([['ns/cfg', CM]]);
  const tokens: TokenRequestFor[] = [];
  const pod: V1Pod = {
    metadata: { name: 'web', namespace: 'ns', uid: 'u1', labels: { b: '2', a: 'x"y' } },
    spec: {
      serviceAccountName: 'sa',
      containers: [{ name: 'app', resources: { limits: { memory: '64Mi' } } }],
      volumes,
    },
  };
  const v = new PodVolumes(
    pod,
    dir,
    { podIp: '10.244.0.5', hostIp: '10.240.0.2' },
    {
      sources: {
        configMap: (ns, name) => configMaps.get(`${ns}/${name}`),
        secret: (ns, name) => (ns === 'ns' && name === 'creds' ? SECRET : undefined),
      },
      requestToken: (r) => {
        tokens.push(r);
        return Promise.resolve(`token-${String(tokens.length)}`);
      },
      hostPath: (p) => node.hostPath(p),
      clock,
      log: silentLogs('test').scope('volumes'),
    },
  );
  t.after(() => Promise.resolve(v.stop()));
  return { v, dir, tokens, pod, configMaps, node };
}

test('configMap and secret volumes hold their keys (items pick and rename, defaultMode applies); a missing key is a FailedMount', async (t) => {
  const { v, dir } = await volumesFor(t, [
    {
      name: 'config',
      configMap: { name: 'cfg', items: [{ key: 'app.yaml', path: 'conf/app.yaml' }], defaultMode: 0o600 },
    },
    { name: 'creds', secret: { secretName: 'creds' } },
  ]);
  await v.setUp();
  assert.equal(await readFile(path.join(dir, 'config', 'conf', 'app.yaml'), 'utf8'), 'a: 1');
  assert.equal((await stat(path.join(dir, 'config', 'conf', 'app.yaml'))).mode & 0o777, 0o600);
  assert.equal(await readFile(path.join(dir, 'creds', 'password'), 'utf8'), 's3cr3t');
  assert.deepEqual(
    v.mounts({ name: 'app', volumeMounts: [{ name: 'config', mountPath: '/etc/app', readOnly: true }] }),
    [{ destination: '/etc/app', source: path.join(dir, 'config'), readOnly: true, propagation: undefined }],
  );

  const { v: bad } = await volumesFor(t, [
    { name: 'config', configMap: { name: 'cfg', items: [{ key: 'nope', path: 'x' }] } },
  ]);
  await assert.rejects(bad.setUp(), {
    message: 'MountVolume.SetUp failed for volume "config" : configmap references non-existent config key: nope',
  });
  const { v: missing } = await volumesFor(t, [{ name: 's', secret: { secretName: 'gone' } }]);
  await assert.rejects(missing.setUp(), { message: /volume "s" : secret "gone" not found/ });
  const { v: optional } = await volumesFor(t, [{ name: 's', secret: { secretName: 'gone', optional: true } }]);
  await optional.setUp();
});

test('a volume type amesh up has no plugin for is refused by name, and hostPath checks its type', async (t) => {
  const { v } = await volumesFor(t, [{ name: 'data', persistentVolumeClaim: { claimName: 'c' } }]);
  await assert.rejects(v.setUp(), {
    message: /volume "data" : amesh up has no volume plugin for persistentVolumeClaim volume/,
  });
  const { v: h } = await volumesFor(t, [
    { name: 'h', hostPath: { path: '/etc/hostname-does-not-exist', type: 'Directory' } },
  ]);
  await assert.rejects(h.setUp(), {
    message: /hostPath type check failed: \/etc\/hostname-does-not-exist is not a directory/,
  });
});

test("a hostPath under the node's own directories (/etc/cni/net.d, /var/run/ztunnel) is made in the node's root and mounted at the path the pod names; another is the host's", async (t) => {
  const shared = await mkdtemp(path.join(tmpdir(), 'host-'));
  t.after(() => rm(shared, { recursive: true, force: true }));
  const { v, node } = await volumesFor(t, [
    { name: 'conf', hostPath: { path: '/etc/cni/net.d', type: 'DirectoryOrCreate' } },
    { name: 'sock', hostPath: { path: '/var/run/ztunnel', type: 'DirectoryOrCreate' } },
    { name: 'shared', hostPath: { path: shared, type: 'Directory' } },
  ]);
  await v.setUp();
  const c = { name: 'app', volumeMounts: ['conf', 'sock', 'shared'].map((n) => ({ name: n, mountPath: `/m/${n}` })) };
  assert.deepEqual(
    v.mounts(c).map((m) => m.source),
    [path.join(node.root, 'etc/cni/net.d'), path.join(node.root, 'run/ztunnel'), shared],
  );
  assert.ok((await stat(path.join(node.root, 'etc/cni/net.d'))).isDirectory());
});

test('downwardAPI files: labels as sorted key="value" lines, one label, the namespace, a container\'s memory limit', async (t) => {
  const { v, dir } = await volumesFor(t, [
    {
      name: 'info',
      downwardAPI: {
        items: [
          { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
          { path: 'b', fieldRef: { fieldPath: "metadata.labels['b']" } },
          { path: 'ns', fieldRef: { fieldPath: 'metadata.namespace' } },
          { path: 'mem', resourceFieldRef: { containerName: 'app', resource: 'limits.memory', divisor: '1Mi' } },
        ],
      },
    },
  ]);
  await v.setUp();
  const read = (f: string): Promise<string> => readFile(path.join(dir, 'info', f), 'utf8');
  assert.equal(await read('labels'), 'a="x\\"y"\nb="2"');
  assert.equal(await read('b'), '2');
  assert.equal(await read('ns'), 'ns');
  assert.equal(await read('mem'), '64');
});

test('a projected token is bound to the pod for its audience and requested again once 80% of its lifetime has passed', async (t) => {
  const clock = new ManualClock(1_000_000);
  const { v, dir, tokens } = await volumesFor(
    t,
    [
      {
        name: 'istio-token',
        projected: {
          sources: [{ serviceAccountToken: { audience: 'istio-ca', expirationSeconds: 600, path: 'istio-token' } }],
        },
      },
    ],
    clock,
  );
  await v.setUp();
  assert.deepEqual(tokens, [
    {
      namespace: 'ns',
      serviceAccount: 'sa',
      audience: 'istio-ca',
      expirationSeconds: 600,
      pod: { name: 'web', uid: 'u1' },
    },
  ]);
  assert.equal(await readFile(path.join(dir, 'istio-token', 'istio-token'), 'utf8'), 'token-1');
  assert.ok(clock.hasTimerAt(1_000_000 + 480_000), 'renewed at 80% of 600 s');
  // The payload is swapped by renaming a new ..data over the old one: wait for that rename.
  const ac = new AbortController();
  const swapped = (async () => {
    for await (const e of watch(path.join(dir, 'istio-token'), { signal: ac.signal }))
      if (e.filename === '..data') return;
  })();
  clock.advance(480_000);
  await swapped;
  ac.abort();
  assert.equal(await readFile(path.join(dir, 'istio-token', 'istio-token'), 'utf8'), 'token-2');
  assert.equal(tokens.length, 2);
});

test('a ConfigMap change rewrites only the volumes that read it', async (t) => {
  const { v, dir, pod, configMaps } = await volumesFor(t, [{ name: 'config', configMap: { name: 'cfg' } }]);
  await v.setUp();
  configMaps.set('ns/cfg', { metadata: { name: 'cfg', namespace: 'ns' }, data: { 'app.yaml': 'a: 2' } });
  await v.refresh(pod, { kind: 'Secret', name: 'cfg' });
  assert.equal(
    await readFile(path.join(dir, 'config', 'app.yaml'), 'utf8'),
    'a: 1',
    'a Secret of the same name is another object',
  );
  await v.refresh(pod, { kind: 'ConfigMap', name: 'cfg' });
  assert.equal(await readFile(path.join(dir, 'config', 'app.yaml'), 'utf8'), 'a: 2');
  assert.equal(await readFile(path.join(dir, 'config', 'other'), 'utf8').catch(() => 'gone'), 'gone');
});
