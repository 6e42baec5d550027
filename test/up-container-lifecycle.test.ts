/**
 * `amesh up`'s kubelet runs a pod's containers through their lifecycle as kubelet does: a liveness probe that
 * starts failing gets its container killed and restarted (restartCount, lastState, Unhealthy and Killing events), a
 * startup probe holds `started` and readiness back until it succeeds, a preStop hook runs before the container gets
 * SIGTERM on a graceful deletion (a failing one is a FailedPreStopHook event), and init containers run one at a
 * time, in order, to completion before the app containers start (initContainerStatuses, the Initialized condition).
 * The control plane is static pods of node1's kubelet, as kubeadm makes it: each of the API server, the
 * controller-manager and the scheduler, killed, is restarted with what the API acknowledged kept, and a deleted
 * mirror pod comes back. A killed kubelet is restarted and takes over the containers of the one before.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  amesh,
  killContainer,
  kubectlIn,
  launchUp,
  removeCluster,
  upSkip,
  type LaunchedUp,
} from './helpers/amesh-up.js';
import { namespaces, object } from './helpers/manifests.js';
import { runToExit } from './helpers/run-to-exit.js';
import { waitFor } from './helpers/mesh-fixture.js';
import { TestNetns } from './helpers/netns.js';

const NS = 'life';

interface ContainerStatus {
  name: string;
  ready: boolean;
  started?: boolean;
  restartCount: number;
  state: { running?: object; waiting?: { reason: string }; terminated?: { exitCode: number; reason: string } };
  lastState?: { terminated?: { exitCode: number; reason: string } };
}
interface PodJson {
  status: {
    phase: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    initContainerStatuses?: ContainerStatus[];
    containerStatuses?: ContainerStatus[];
  };
}
interface MirrorJson {
  metadata: {
    uid: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    ownerReferences?: { kind: string; name: string; uid: string }[];
  };
  spec: { hostNetwork?: boolean; volumes?: { name: string }[] };
  status: {
    containerStatuses?: (ContainerStatus & {
      containerID: string;
      state: { running?: { startedAt: string } };
      lastState?: { terminated?: { exitCode: number; reason: string } };
    })[];
  };
}
const CONTROL_PLANE = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;
interface EventJson {
  involvedObject: { name: string };
  type: string;
  reason: string;
  message: string;
}

/** A pod of NS; its containers get an image (amesh up runs their commands on the host's files). */
const pod = (
  name: string,
  spec: { containers: object[]; initContainers?: object[]; [field: string]: unknown },
): string => {
  const withImage = (cs: object[] | undefined) => cs?.map((c) => ({ image: 'busybox', ...c }));
  return object({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: { ...spec, containers: withImage(spec.containers), initContainers: withImage(spec.initContainers) },
  });
};
const idle = (marker: string, before = ''): string[] => [
  'node',
  '-e',
  `/* ${marker} */ ${before} setInterval(() => undefined, 1e6)`,
];

describe('amesh up: container lifecycle (probes, preStop, init containers)', { skip: upSkip }, () => {
  const id = randomBytes(3).toString('hex');
  const cluster = `l${id}`;
  const marker = `amesh-life-test-${id}`;
  let host: TestNetns;
  let dir: string;
  let dataDir: string;
  let launched: LaunchedUp | undefined;
  const kubectl = (...args: string[]) => kubectlIn(host, dataDir, ...args);
  const getPod = async (name: string): Promise<PodJson> =>
    JSON.parse((await kubectl('get', 'pod', '-n', NS, name, '-o', 'json')).stdout) as PodJson;
  const events = async (name: string): Promise<EventJson[]> =>
    (
      JSON.parse((await kubectl('get', 'events', '-n', NS, '-o', 'json')).stdout) as { items: EventJson[] }
    ).items.filter((e) => e.involvedObject.name === name);
  const file = (name: string): string => path.join(dir, name);

  before(async () => {
    host = await TestNetns.create();
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-life-'));
    dataDir = path.join(dir, 'data');
    const manifests = path.join(dir, 'manifests');
    await mkdir(manifests);
    await writeFile(
      path.join(manifests, 'pods.yaml'),
      namespaces(NS) +
        // Healthy while `sick` is missing; the test makes it sick, then well again once it was killed.
        pod('liveness', {
          terminationGracePeriodSeconds: 2,
          containers: [
            {
              name: 'app',
              // Each run counts itself in `runs`.
              command: idle(marker, `require('fs').appendFileSync('${file('runs')}', 'x');`),
              livenessProbe: {
                exec: { command: ['test', '!', '-f', file('sick')] },
                periodSeconds: 1,
                failureThreshold: 2,
              },
            },
          ],
        }) +
        pod('slow-start', {
          terminationGracePeriodSeconds: 2,
          containers: [
            {
              name: 'app',
              command: idle(marker),
              startupProbe: {
                exec: { command: ['test', '-f', file('started')] },
                periodSeconds: 1,
                failureThreshold: 600,
              },
              readinessProbe: { exec: { command: ['true'] }, periodSeconds: 1 },
            },
          ],
        }) +
        // On SIGTERM the app notes it in `stop-order` after what its preStop hook wrote there.
        pod('stopper', {
          terminationGracePeriodSeconds: 5,
          containers: [
            {
              name: 'app',
              command: idle(
                marker,
                `process.on('SIGTERM', () => { require('fs').appendFileSync('${file('stop-order')}', 'SIGTERM\\n'); process.exit(0); });`,
              ),
              lifecycle: { preStop: { exec: { command: ['sh', '-c', `echo preStop >> ${file('stop-order')}`] } } },
            },
            {
              name: 'failing-hook',
              command: idle(marker),
              lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo no >&2; exit 7'] } } },
            },
          ],
        }) +
        pod('inits', {
          terminationGracePeriodSeconds: 2,
          volumes: [{ name: 'work', emptyDir: {} }],
          initContainers: ['first', 'second'].map((n) => ({
            name: n,
            command: ['sh', '-c', `echo ${n} >> /work/order`],
            volumeMounts: [{ name: 'work', mountPath: '/work' }],
          })),
          containers: [
            {
              name: 'app',
              command: idle(marker, `process.stdout.write(require('fs').readFileSync('/work/order'));`),
              volumeMounts: [{ name: 'work', mountPath: '/work' }],
            },
          ],
        }) +
        pod('init-fails', {
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 2,
          initContainers: [{ name: 'setup', command: ['sh', '-c', 'exit 4'] }],
          containers: [{ name: 'app', command: idle(marker) }],
        }),
    );
    const flags = {
      '--config-dir': manifests,
      '--data-dir': dataDir,
      '--name': cluster,
      '--nodes': '1',
      '--dataplane': 'none',
      // slow-start is not Ready until its test says so: nothing to wait for.
      '--wait': '0',
    };
    launched = launchUp(host, Object.entries(flags).flat());
    await launched.ready;
  });

  after(async () => {
    await removeCluster(launched, host, dataDir);
    await host.remove();
    await rm(dir, { recursive: true, force: true });
  });

  test('a liveness probe that fails failureThreshold times kills the container, which restartPolicy Always restarts: restartCount 1, lastState terminated, Unhealthy and Killing events', async () => {
    const runs = (): string => (existsSync(file('runs')) ? readFileSync(file('runs'), 'utf8') : '');
    // Its command has run (the container's process may start a moment after its status says running).
    await waitFor(
      'liveness running its command',
      async () =>
        (await getPod('liveness')).status.containerStatuses?.[0]?.state.running !== undefined && runs() === 'x',
      60_000,
    );
    await writeFile(file('sick'), '');
    // Killed and restarted; then well again. The test, not the new run, removes `sick`: a run that starts slowly on a
    // loaded machine would otherwise be killed again and again into the restart back-off. It may still be killed once
    // more before `sick` goes, as kubelet's would: at least once.
    await waitFor(
      'liveness killed',
      async () => ((await getPod('liveness')).status.containerStatuses?.[0]?.restartCount ?? 0) >= 1,
      60_000,
    );
    await rm(file('sick'), { force: true });
    await waitFor(
      'liveness running again',
      async () => {
        const s = (await getPod('liveness')).status.containerStatuses?.[0];
        return (s?.restartCount ?? 0) >= 1 && s?.state.running !== undefined && runs().length === s.restartCount + 1;
      },
      60_000,
    );
    const s = (await getPod('liveness')).status.containerStatuses![0]!;
    assert.ok(s.lastState?.terminated, 'the killed run is in lastState');
    const ev = await events('liveness');
    assert.ok(
      ev.some(
        (e) => e.type === 'Warning' && e.reason === 'Unhealthy' && e.message.startsWith('Liveness probe failed: '),
      ),
      JSON.stringify(ev),
    );
    assert.ok(
      ev.some(
        (e) =>
          e.type === 'Normal' &&
          e.reason === 'Killing' &&
          e.message === 'Container app failed liveness probe, will be restarted',
      ),
      JSON.stringify(ev),
    );
  });

  test('a startup probe holds started and Ready back until it succeeds; then the readiness probe runs', async () => {
    await waitFor(
      'a failed startup probe',
      async () =>
        (await events('slow-start')).some(
          (e) => e.reason === 'Unhealthy' && e.message.startsWith('Startup probe failed: '),
        ),
      60_000,
    );
    let p = await getPod('slow-start');
    const s = p.status.containerStatuses![0]!;
    assert.ok(s.state.running);
    assert.equal(s.started, false);
    assert.equal(s.ready, false);
    await writeFile(file('started'), '');
    await waitFor(
      'slow-start Ready',
      async () => (await getPod('slow-start')).status.conditions?.find((c) => c.type === 'Ready')?.status === 'True',
      30_000,
    );
    p = await getPod('slow-start');
    assert.equal(p.status.containerStatuses![0]!.started, true);
    assert.equal(p.status.containerStatuses![0]!.restartCount, 0);
  });

  test('two init containers run in order to completion before the app container, which reads what they wrote; Initialized is True', async () => {
    await waitFor('inits running', async () => (await getPod('inits')).status.phase === 'Running', 60_000);
    const p = await getPod('inits');
    assert.deepEqual(
      p.status.initContainerStatuses?.map((s) => [
        s.name,
        s.ready,
        s.state.terminated?.exitCode,
        s.state.terminated?.reason,
      ]),
      [
        ['first', true, 0, 'Completed'],
        ['second', true, 0, 'Completed'],
      ],
    );
    assert.equal(p.status.conditions?.find((c) => c.type === 'Initialized')?.status, 'True');
    await waitFor(
      'the app printed the order',
      async () =>
        (await amesh(host, 'logs', '--data-dir', dataDir, `${NS}/inits`, '-c', 'app')).stdout === 'first\nsecond\n',
      10_000,
    );
  });

  test('an init container that fails under restartPolicy Never fails the pod: Initialized False (ContainersNotInitialized), the app never started', async () => {
    await waitFor('init-fails Failed', async () => (await getPod('init-fails')).status.phase === 'Failed', 60_000);
    const p = await getPod('init-fails');
    const init = p.status.conditions?.find((c) => c.type === 'Initialized');
    assert.deepEqual(
      [init?.status, init?.reason, init?.message],
      ['False', 'ContainersNotInitialized', 'containers with incomplete status: [setup]'],
    );
    assert.equal(p.status.initContainerStatuses?.[0]?.state.terminated?.exitCode, 4);
    assert.equal(p.status.containerStatuses?.[0]?.state.waiting?.reason, 'PodInitializing');
    const column = (await kubectl('get', 'pod', '-n', NS, 'init-fails', '--no-headers')).stdout;
    assert.match(column, /Init:Error/);
  });

  test("a graceful deletion runs the preStop hook before the container's SIGTERM; a failing hook is a FailedPreStopHook event and the container stops all the same", async () => {
    await waitFor('stopper running', async () => (await getPod('stopper')).status.phase === 'Running', 60_000);
    const deleted = await kubectl('delete', 'pod', '-n', NS, 'stopper', '--wait=true', '--timeout=60s');
    assert.equal(deleted.status, 0, deleted.stderr);
    assert.equal(readFileSync(file('stop-order'), 'utf8'), 'preStop\nSIGTERM\n');
    const ev = await events('stopper');
    const failed = ev.find((e) => e.reason === 'FailedPreStopHook');
    assert.equal(failed?.type, 'Warning', JSON.stringify(ev));
    assert.match(
      failed.message,
      /^Exec lifecycle hook \(\[sh -c echo no >&2; exit 7\]\) for Container "failing-hook" in Pod "stopper_life\(/,
    );
  });
  /** The mirror pod of static pod `name` on node1, as the API has it. */
  const mirror = async (name: string): Promise<MirrorJson> =>
    JSON.parse((await kubectl('get', 'pod', '-n', 'kube-system', `${name}-node1`, '-o', 'json')).stdout) as MirrorJson;
  /** Waits until the static pod `name` has restarted `restarts` times and runs again, ready. */
  const runningAgain = (name: string, restarts: number): Promise<number> =>
    waitFor(
      `${name} restarted ${String(restarts)} times and ready`,
      async () => {
        const s = (await kubectl('get', 'pod', '-n', 'kube-system', `${name}-node1`, '-o', 'json')).stdout;
        if (s === '') return false;
        const c = (JSON.parse(s) as MirrorJson).status.containerStatuses?.[0];
        return c?.restartCount === restarts && c.state.running !== undefined && c.ready;
      },
      60_000,
    );

  test("the control plane is kubeadm's: static pods kube-apiserver, kube-controller-manager and kube-scheduler of node1 (the control-plane role), mirrored in the API", async () => {
    const nodes = JSON.parse((await kubectl('get', 'nodes', '-o', 'json')).stdout) as {
      items: { metadata: { name: string; uid: string; labels: Record<string, string> } }[];
    };
    const node1 = nodes.items.find((n) => n.metadata.name === 'node1')!;
    assert.equal(node1.metadata.labels['node-role.kubernetes.io/control-plane'], '');
    for (const name of CONTROL_PLANE) {
      await runningAgain(name, 0);
      const m = await mirror(name);
      assert.deepEqual(m.metadata.labels, { component: name, tier: 'control-plane' });
      assert.equal(m.metadata.annotations['kubernetes.io/config.source'], 'file');
      assert.equal(
        m.metadata.annotations['kubernetes.io/config.mirror'],
        m.metadata.annotations['kubernetes.io/config.hash'],
      );
      assert.deepEqual(
        m.metadata.ownerReferences?.map((o) => [o.kind, o.name, o.uid]),
        [['Node', 'node1', node1.metadata.uid]],
      );
      assert.equal(m.spec.hostNetwork, true);
      assert.equal(
        m.spec.volumes?.some((v) => v.name.startsWith('kube-api-access-')),
        false,
        'a mirror gets no token',
      );
    }
  });

  test('a SIGKILLed API server is restarted by its kubelet with every acknowledged write kept: restartCount 1, lastState exit 137', async () => {
    const before = await mirror('kube-apiserver');
    const created = await kubectl('create', 'configmap', '-n', NS, 'acknowledged', '--from-literal=k=v');
    assert.equal(created.status, 0, created.stderr);
    const killed = await killContainer(host, dataDir, before.status.containerStatuses![0]!.containerID);
    assert.equal(killed.status, 0, killed.stderr);
    await runningAgain('kube-apiserver', 1);
    const got = await kubectl('get', 'configmap', '-n', NS, 'acknowledged', '-o', 'jsonpath={.data.k}');
    assert.equal(got.stdout, 'v', got.stderr);
    const last = (await mirror('kube-apiserver')).status.containerStatuses![0]!.lastState?.terminated;
    assert.deepEqual([last?.exitCode, last?.reason], [137, 'Error']);
  });

  test('a SIGKILLed controller-manager and scheduler are restarted: a Deployment made after gets its pod made, placed and running', async () => {
    for (const name of ['kube-controller-manager', 'kube-scheduler'] as const) {
      const m = await mirror(name);
      const killed = await killContainer(host, dataDir, m.status.containerStatuses![0]!.containerID);
      assert.equal(killed.status, 0, killed.stderr);
    }
    await Promise.all([runningAgain('kube-controller-manager', 1), runningAgain('kube-scheduler', 1)]);
    const made = await kubectl(
      'create',
      'deployment',
      '-n',
      NS,
      'after-kill',
      '--image=busybox',
      '--',
      ...idle(marker),
    );
    assert.equal(made.status, 0, made.stderr);
    await waitFor(
      'the Deployment available',
      async () =>
        (await kubectl('get', 'deployment', '-n', NS, 'after-kill', '-o', 'jsonpath={.status.availableReplicas}'))
          .stdout === '1',
      60_000,
    );
  });

  test('a deleted mirror pod is made again, as kubelet keeps it; the static pod itself runs on untouched', async () => {
    const before = await mirror('kube-scheduler');
    const deleted = await kubectl('delete', 'pod', '-n', 'kube-system', 'kube-scheduler-node1', '--wait=false');
    assert.equal(deleted.status, 0, deleted.stderr);
    await waitFor(
      'a new mirror',
      async () => {
        const out = (await kubectl('get', 'pod', '-n', 'kube-system', 'kube-scheduler-node1', '-o', 'json')).stdout;
        return out !== '' && (JSON.parse(out) as MirrorJson).metadata.uid !== before.metadata.uid;
      },
      60_000,
    );
    await runningAgain('kube-scheduler', 1);
    assert.equal(
      (await mirror('kube-scheduler')).status.containerStatuses![0]!.state.running?.startedAt,
      before.status.containerStatuses![0]!.state.running?.startedAt,
    );
  });
  test('a SIGKILLed kubelet is restarted and takes its pods over: they run on (same start, no restart), a container that ended meanwhile is seen ended and restarted, and new pods run', async () => {
    const run = async (name: string): Promise<void> => {
      const made = await kubectl('run', name, '-n', NS, '--image=busybox', '--restart=Always', '--', ...idle(marker));
      assert.equal(made.status, 0, made.stderr);
    };
    const status = async (name: string) => (await getPod(name)).status.containerStatuses?.[0];
    await Promise.all([run('survivor'), run('ends-meanwhile')]);
    await waitFor(
      'both running',
      async () =>
        (await status('survivor'))?.state.running !== undefined && (await status('ends-meanwhile'))?.ready === true,
      60_000,
    );
    const survivor = (await getPod('survivor')) as unknown as MirrorJson;
    const ends = (await getPod('ends-meanwhile')) as unknown as MirrorJson;
    const kubelet = `kubelet --data-dir ${dataDir} --hostname-override node1`;
    assert.equal((await runToExit('pkill', ['-KILL', '-f', kubelet], 10_000)).status, 0, 'the kubelet was running');
    const killed = await killContainer(host, dataDir, ends.status.containerStatuses![0]!.containerID);
    assert.equal(killed.status, 0, killed.stderr);
    await waitFor(
      'the container ended meanwhile restarted',
      async () => (await status('ends-meanwhile'))?.restartCount === 1,
      60_000,
    );
    const after = (await getPod('survivor')) as unknown as MirrorJson;
    assert.equal(
      after.status.containerStatuses![0]!.state.running?.startedAt,
      survivor.status.containerStatuses![0]!.state.running?.startedAt,
      'the running container was taken over, not started again',
    );
    assert.equal(after.status.containerStatuses![0]!.restartCount, 0);
    assert.equal(after.metadata.uid, survivor.metadata.uid);
    assert.match(launched!.stderr(), /the kubelet of node1 exited \(SIGKILL\); restarting it in 1 s/);
    await run('after-restart');
    await waitFor('a new pod runs', async () => (await status('after-restart'))?.state.running !== undefined, 60_000);
    const node = await kubectl(
      'get',
      'node',
      'node1',
      '-o',
      'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
    );
    assert.equal(node.stdout, 'True');
  });
  test('pods deleted while their kubelet is down are stopped by the next one: a graceful deletion completes, a forced one leaves no process or namespace', async () => {
    const tags = { graceful: `${marker}-graceful`, forced: `${marker}-forced` };
    for (const [name, tag] of Object.entries(tags)) {
      const made = await kubectl('run', name, '-n', NS, '--image=busybox', '--', ...idle(tag));
      assert.equal(made.status, 0, made.stderr);
    }
    const running = async (name: string): Promise<boolean> =>
      (await getPod(name)).status.containerStatuses?.[0]?.state.running !== undefined;
    await waitFor('both running', async () => (await running('graceful')) && (await running('forced')), 60_000);
    const forcedUid = ((await getPod('forced')) as unknown as MirrorJson).metadata.uid;
    const processes = async (tag: string): Promise<string> =>
      (await runToExit('pgrep', ['-f', tag], 10_000)).stdout.trim();
    assert.notEqual(await processes(tags.forced), '');
    // Frozen, the kubelet sees neither deletion; killed, its successor finds them done in the API.
    const kubelet = `kubelet --data-dir ${dataDir} --hostname-override node1`;
    assert.equal((await runToExit('pkill', ['-STOP', '-f', kubelet], 10_000)).status, 0);
    try {
      const graceful = await kubectl('delete', 'pod', '-n', NS, 'graceful', '--wait=false');
      assert.equal(graceful.status, 0, graceful.stderr);
      const forced = await kubectl('delete', 'pod', '-n', NS, 'forced', '--grace-period=0', '--force');
      assert.equal(forced.status, 0, forced.stderr);
    } finally {
      await runToExit('pkill', ['-KILL', '-f', kubelet], 10_000);
    }
    await waitFor(
      'the graceful deletion completed',
      async () => (await kubectl('get', 'pod', '-n', NS, 'graceful', '-o', 'name')).stdout === '',
      60_000,
    );
    await waitFor('both containers gone', async () => (await processes(`${marker}-(graceful|forced)`)) === '', 60_000);
    await waitFor(
      "the forced pod's namespace gone",
      async () => !(await runToExit('ip', ['netns', 'list'], 10_000)).stdout.includes(forcedUid),
      60_000,
    );
  });
});
