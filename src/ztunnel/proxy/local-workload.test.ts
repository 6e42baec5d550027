import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { parseLocalConfig } from '../state/local-config.js';
import { ProxyState } from '../state/proxy-state.js';
import { LocalWorkloadInformation } from './local-workload.js';

const config = (workloads: string): ReturnType<typeof parseLocalConfig> =>
  parseLocalConfig('mesh.yaml', `workloads:\n${workloads}`);
const WEB =
  '- {uid: Kubernetes//Pod/shop/web-0, name: web-0, namespace: shop, serviceAccount: web, workloadIps: [10.0.0.1], node: n1}\n';
const INFO = { name: 'web-0', namespace: 'shop', serviceAccount: 'web' };

test("in-pod: the pod's workload is the one on this node with ZDS's name, namespace and service account", () => {
  const state = new ProxyState();
  state.apply(
    config(
      `${WEB}- {uid: Kubernetes//Pod/shop/web-0-elsewhere, name: web-0, namespace: shop, serviceAccount: web, workloadIps: [10.0.1.1], node: n2}\n- {uid: Kubernetes//Pod/shop/db-0, name: db-0, namespace: shop, workloadIps: [10.0.0.2], node: n1}\n`,
    ),
  );
  assert.equal(
    LocalWorkloadInformation.byInfo(state, 'n1', 'pod-uid', INFO).current()?.uid,
    'Kubernetes//Pod/shop/web-0',
  );
  assert.equal(
    LocalWorkloadInformation.byInfo(state, 'n1', 'pod-uid', { ...INFO, serviceAccount: 'other' }).current(),
    undefined,
    'another identity is not this pod',
  );
  // An empty service account in WDS is "default", as ZDS names it.
  assert.equal(
    LocalWorkloadInformation.byInfo(state, 'n1', 'pod-uid', {
      name: 'db-0',
      namespace: 'shop',
      serviceAccount: 'default',
    }).current()?.uid,
    'Kubernetes//Pod/shop/db-0',
  );
  assert.equal(
    LocalWorkloadInformation.byInfo(state, 'n1', 'pod-uid', INFO).key,
    'pod-uid',
    'connections are tracked under the pod UID',
  );
});

test('a connection that arrives before istiod sent the workload waits for it, and gets it when it arrives', async () => {
  const state = new ProxyState();
  const local = LocalWorkloadInformation.byInfo(state, 'n1', 'pod-uid', INFO);
  const waiting = local.wait();
  state.apply(
    config('- {uid: Kubernetes//Pod/shop/db-0, name: db-0, namespace: shop, workloadIps: [10.0.0.2], node: n1}\n'),
  );
  const arrived = once(state, 'change');
  state.apply(config(WEB));
  await arrived;
  assert.equal((await waiting)?.uid, 'Kubernetes//Pod/shop/web-0');
  assert.equal(state.listenerCount('change'), 0, 'the wait stops listening once it is settled');
});
