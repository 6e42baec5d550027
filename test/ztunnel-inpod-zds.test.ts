// ztunnel in in-pod mode (INPOD_ENABLED=true) driven by amesh's node agent over ZDS: its readiness waits for the
// agent's snapshot, and each pod the agent adds gets ztunnel's listeners inside its own network namespace. Root only.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { ZtunnelServer } from '../src/cni/agent/ztunnel-server.js';
import type { SnapshotPod } from '../src/cni/agent/ztunnel-link.js';
import type { Ztunnel } from '../src/ztunnel/ztunnel.js';
import { startZtunnel } from './helpers/in-process.js';
import { meshFixture, waitFor, type MeshFixture } from './helpers/mesh-fixture.js';
import { TestNetns, netnsSkip } from './helpers/netns.js';

const skip = netnsSkip();
const INFO = { name: 'web-0', namespace: 'shop', serviceAccount: 'web' };

describe('ztunnel in-pod mode driven by the node agent over ZDS', { skip }, () => {
  let fx: MeshFixture;
  let pod: TestNetns;
  let zt: Ztunnel;
  let agent: ZtunnelServer | undefined;
  const cache = new Map<string, SnapshotPod>();
  const readiness = async (): Promise<string> => {
    const r = await fetch(`http://127.0.0.1:${zt.ports.readiness}/healthz/ready`);
    return `${r.status} ${await r.text()}`;
  };
  /** ztunnel's in-pod metrics from its /metrics endpoint, each `name value` (they have no labels). */
  const workloadManagerMetrics = async (): Promise<string[]> => {
    const body = await (await fetch(`http://127.0.0.1:${zt.ports.metrics}/metrics`)).text();
    return body.split('\n').filter((l) => l.startsWith('workload_manager_'));
  };
  const podListeners = async (): Promise<string> => pod.exec('ss', ['-tlnH', 'sport', '=', ':15008']);

  before(async () => {
    fx = await meshFixture();
    await fx.write('mesh.yaml', 'workloads: []\n');
    pod = await TestNetns.create();
    zt = await startZtunnel(
      fx.file('mesh.yaml'),
      'node94',
      fx.ca,
      { INPOD_ENABLED: 'true', INPOD_UDS: path.join(fx.dir, 'ztunnel.sock'), UNSTABLE_ENABLE_SOCKS5: 'false' },
      { waitReady: false },
    );
  });

  after(async () => {
    await zt.shutdown();
    agent?.close();
    for (const p of cache.values()) if (p.netns !== undefined) closeSync(p.netns);
    await pod.remove();
    await fx.cleanup();
  });

  test('not ready until the node agent is there and its snapshot is in; then the snapshot pod is served inside its netns, before istiod knows it, and counted in workload_manager metrics', async () => {
    assert.match(await readiness(), /^500 .*no snapshot from the node agent/);
    cache.set('pod-1', { uid: 'pod-1', info: INFO, netns: openSync(pod.path, 'r') });
    agent = new ZtunnelServer(path.join(fx.dir, 'ztunnel.sock'), () => [...cache.values()], pino({ level: 'silent' }));
    agent.listen();
    await waitFor('ztunnel ready after the snapshot', () => zt.pending().length === 0, 20_000);
    assert.match(await readiness(), /^200/);
    assert.match(await podListeners(), /0\.0\.0\.0:15008/);
    assert.deepEqual(Object.keys((zt.dump() as { workloadState: object }).workloadState), ['pod-1']);
    assert.deepEqual(await workloadManagerMetrics(), [
      'workload_manager_active_proxy_count 1',
      'workload_manager_pending_proxy_count 0',
      'workload_manager_proxies_started_total 1',
      'workload_manager_proxies_stopped_total 0',
    ]);
  });

  test("DelWorkload stops the pod's listeners in its netns, and ztunnel's workload_manager metrics follow", async () => {
    const p = cache.get('pod-1')!;
    cache.delete('pod-1');
    await agent!.delWorkload('pod-1');
    closeSync(p.netns!);
    assert.equal((await podListeners()).trim(), '');
    assert.deepEqual(Object.keys((zt.dump() as { workloadState: object }).workloadState), []);
    assert.deepEqual(await workloadManagerMetrics(), [
      'workload_manager_active_proxy_count 0',
      'workload_manager_pending_proxy_count 0',
      'workload_manager_proxies_started_total 1',
      'workload_manager_proxies_stopped_total 1',
    ]);
  });
});
