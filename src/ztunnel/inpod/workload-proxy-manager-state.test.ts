import { describe, test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { openSync } from 'node:fs';
import { pino } from 'pino';
import { isMeshError } from '../../lib/errors.js';
import { netnsSkip, TestNetns } from '../../../test/helpers/netns.js';
import { openFdCount, ownNetnsFd, RecordingRunner } from '../../../test/helpers/recording-runner.js';
import { MetricsRegistry } from '../admin/prom-client-core.js';
import { WorkloadProxyManagerState } from './workload-proxy-manager-state.js';

const info = { name: 'web', namespace: 'default', serviceAccount: 'web' };
const log = pino({ level: 'silent' });
const code = (c: string) => (e: unknown) => isMeshError(e) && e.code === c;

describe('ztunnel in-pod state manager (ztunnel src/inpod/statemanager.rs)', () => {
  let runner: RecordingRunner;
  let state: WorkloadProxyManagerState;
  const add = (uid: string, netns = ownNetnsFd()) => state.processMsg({ kind: 'add', uid, info, netns });
  const snapshotSent = () => state.processMsg({ kind: 'snapshotSent' });

  beforeEach(() => {
    runner = new RecordingRunner();
    state = new WorkloadProxyManagerState(runner, log);
  });

  test('not ready until SnapshotSent; an Add before it starts the proxy and hands the runner its netns fd', async () => {
    await add('a');
    assert.equal(state.ready(), false);
    await snapshotSent();
    assert.equal(state.ready(), true);
    assert.deepEqual(runner.events, ['start a']);
    assert.deepEqual(runner.infos.get('a'), info);
    state.stopAll();
  });

  test('Add of a running uid in the same netns (dev, ino) is a no-op: no restart, and the duplicate fd is closed', async () => {
    await add('a');
    await snapshotSent();
    const before = openFdCount();
    await add('a');
    assert.deepEqual(runner.events, ['start a']);
    assert.equal(openFdCount(), before);
    state.stopAll();
  });

  test(
    'Add of a running uid with another netns stops the old proxy and starts one in the new netns',
    { skip: netnsSkip() },
    async () => {
      const ns = await TestNetns.create();
      try {
        await add('a');
        await snapshotSent();
        await add('a', openSync(ns.path, 'r'));
        assert.deepEqual(runner.events, ['start a', 'stop a', 'start a']);
        state.stopAll();
      } finally {
        await ns.remove();
      }
    },
  );

  test('a new connection: Keep before SnapshotSent keeps a running proxy, SnapshotSent stops every proxy not Added or Kept', async () => {
    await add('kept');
    await add('re-added');
    await add('gone');
    await snapshotSent();
    state.resetSnapshot();
    assert.equal(state.ready(), false);
    await state.processMsg({ kind: 'keep', uid: 'kept' });
    await add('re-added');
    await snapshotSent();
    assert.deepEqual(runner.events, ['start kept', 'start re-added', 'start gone', 'stop gone']);
    assert.deepEqual(state.runningUids().sort(), ['kept', 're-added']);
    state.stopAll();
  });

  test('Keep after SnapshotSent, a second SnapshotSent, and an Add without workload_info are ZDS_ERR_PROTOCOL', async () => {
    await snapshotSent();
    await assert.rejects(state.processMsg({ kind: 'keep', uid: 'a' }), code('ZDS_ERR_PROTOCOL'));
    await assert.rejects(snapshotSent(), code('ZDS_ERR_PROTOCOL'));
    const before = openFdCount();
    await assert.rejects(
      state.processMsg({ kind: 'add', uid: 'a', info: undefined, netns: ownNetnsFd() }),
      code('ZDS_ERR_PROTOCOL'),
    );
    assert.equal(openFdCount(), before);
    assert.deepEqual(runner.events, []);
  });

  test('a proxy that fails to start: ZDS_ERR_PROXY_START, the pod is pending and readiness waits; a retry that starts it makes ztunnel ready', async () => {
    runner.failing.add('a');
    await assert.rejects(add('a'), code('ZDS_ERR_PROXY_START'));
    await snapshotSent();
    assert.deepEqual(state.pendingUids(), ['a']);
    assert.equal(state.ready(), false);
    await state.retryPending();
    assert.deepEqual(state.pendingUids(), ['a']);
    runner.failing.delete('a');
    await state.retryPending();
    assert.deepEqual(state.pendingUids(), []);
    assert.equal(state.ready(), true);
    assert.deepEqual(runner.events, ['fail a', 'fail a', 'start a']);
    state.stopAll();
  });

  test('Del before SnapshotSent forgets the pod: a pending one at once (its fd closed), a started one at SnapshotSent', async () => {
    runner.failing.add('p');
    const before = openFdCount();
    await assert.rejects(add('p'), code('ZDS_ERR_PROXY_START'));
    await add('s');
    await state.processMsg({ kind: 'del', uid: 'p' });
    await state.processMsg({ kind: 'del', uid: 's' });
    assert.deepEqual(state.pendingUids(), []);
    assert.deepEqual(runner.events, ['fail p', 'start s']);
    await snapshotSent();
    assert.deepEqual(runner.events, ['fail p', 'start s', 'stop s']);
    assert.equal(openFdCount(), before);
    assert.equal(state.ready(), true);
  });

  test('Del after SnapshotSent stops the proxy at once; Del of an unknown uid is acked (idempotent)', async () => {
    await snapshotSent();
    await add('a');
    await state.processMsg({ kind: 'del', uid: 'a' });
    await state.processMsg({ kind: 'del', uid: 'never-added' });
    assert.deepEqual(runner.events, ['start a', 'stop a']);
  });

  test('an Add whose fd is not a network namespace is ZDS_ERR_PROXY_START, nothing starts, the fd is closed and nothing is pending', async () => {
    await snapshotSent();
    const before = openFdCount();
    await assert.rejects(
      state.processMsg({ kind: 'add', uid: 'a', info, netns: openSync('/proc/self/ns/uts', 'r') }),
      code('ZDS_ERR_PROXY_START'),
    );
    assert.equal(openFdCount(), before);
    assert.deepEqual(state.pendingUids(), []);
    assert.deepEqual(runner.events, []);
  });

  test('a new connection forgets pending pods (closing their fds); running proxies keep running', async () => {
    runner.failing.add('p');
    await add('r');
    await snapshotSent();
    const before = openFdCount();
    await assert.rejects(add('p'), code('ZDS_ERR_PROXY_START'));
    state.resetSnapshot();
    assert.deepEqual(state.pendingUids(), []);
    assert.equal(openFdCount(), before);
    assert.deepEqual(state.runningUids(), ['r']);
    state.stopAll();
  });

  test('workload_manager_* metrics: running and pending proxies as gauges, each start and stop counted', async () => {
    const registry = new MetricsRegistry();
    state = new WorkloadProxyManagerState(runner, log, registry);
    const values = async (): Promise<Record<string, number>> =>
      Object.fromEntries(
        (await registry.getMetricsAsJSON()).map((m) => [m.name, (m.values as { value: number }[])[0]!.value]),
      );
    runner.failing.add('p');
    await add('a');
    await add('b');
    await assert.rejects(add('p'), code('ZDS_ERR_PROXY_START'));
    await snapshotSent();
    assert.deepEqual(await values(), {
      workload_manager_active_proxy_count: 2,
      workload_manager_pending_proxy_count: 1,
      workload_manager_proxies_started_total: 2,
      workload_manager_proxies_stopped_total: 0,
    });
    runner.failing.delete('p');
    await state.retryPending();
    await state.processMsg({ kind: 'del', uid: 'a' });
    state.resetSnapshot();
    await state.processMsg({ kind: 'keep', uid: 'p' });
    await snapshotSent();
    assert.deepEqual(await values(), {
      workload_manager_active_proxy_count: 1,
      workload_manager_pending_proxy_count: 0,
      workload_manager_proxies_started_total: 3,
      workload_manager_proxies_stopped_total: 2,
    });
    state.stopAll();
  });
});
