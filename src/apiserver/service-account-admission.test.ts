import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from './kube-object.js';
import { mountServiceAccountToken, SERVICE_ACCOUNT_MOUNT_PATH } from './service-account-admission.js';

type Spec = {
  volumes?: { name: string; projected?: { sources: Record<string, unknown>[] } }[];
  containers: { name: string; volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[] }[];
  initContainers?: { name: string; volumeMounts?: { name: string; mountPath: string }[] }[];
  automountServiceAccountToken?: boolean;
};
const pod = (spec: Spec): KubeObject => ({ metadata: { name: 'p', namespace: 'ns' }, spec }) as unknown as KubeObject;
const specOf = (o: KubeObject): Spec => o.spec as Spec;

test('every container and init container gets kube-api-access-<5> read-only at the service-account path: token, ca.crt, namespace', () => {
  const p = pod({ initContainers: [{ name: 'init' }], containers: [{ name: 'a' }, { name: 'b' }] });
  mountServiceAccountToken(p, undefined);
  const [vol] = specOf(p).volumes!;
  assert.match(vol!.name, /^kube-api-access-[a-z0-9]{5}$/);
  assert.deepEqual(
    vol!.projected!.sources.map((s) => Object.keys(s)[0]),
    ['serviceAccountToken', 'configMap', 'downwardAPI'],
  );
  assert.deepEqual(vol!.projected!.sources[0], { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } });
  for (const c of [...specOf(p).initContainers!, ...specOf(p).containers])
    assert.deepEqual(c.volumeMounts, [{ name: vol!.name, readOnly: true, mountPath: SERVICE_ACCOUNT_MOUNT_PATH }]);
});

test("automountServiceAccountToken: the pod's own setting wins over its ServiceAccount's; a container with its own mount there keeps it", () => {
  const sa = { metadata: { name: 'default' }, automountServiceAccountToken: false } as unknown as KubeObject;
  const off = pod({ containers: [{ name: 'a' }] });
  mountServiceAccountToken(off, sa);
  assert.equal(specOf(off).volumes, undefined);
  const on = pod({ automountServiceAccountToken: true, containers: [{ name: 'a' }] });
  mountServiceAccountToken(on, sa);
  assert.equal(specOf(on).volumes!.length, 1);
  const own = pod({
    containers: [{ name: 'a', volumeMounts: [{ name: 'mine', mountPath: SERVICE_ACCOUNT_MOUNT_PATH }] }],
  });
  mountServiceAccountToken(own, undefined);
  assert.equal(specOf(own).volumes, undefined);
});

test("a mirror pod (a kubelet's copy of a static pod, which runs without a token) gets no token volume", () => {
  const mirror = pod({ containers: [{ name: 'a' }] });
  mirror.metadata.annotations = { 'kubernetes.io/config.mirror': '0123abcd' };
  mountServiceAccountToken(mirror, undefined);
  assert.equal(specOf(mirror).volumes, undefined);
  assert.equal(specOf(mirror).containers[0]!.volumeMounts, undefined);
});
