/**
 * `amesh up`'s kubelet runs a pod's containers through their lifecycle as kubelet does: a liveness probe that
 * starts failing gets its container killed and restarted (restartCount, lastState, Unhealthy and Killing events), a
 * startup probe holds `started` and readiness back until it succeeds, a preStop hook runs before the container gets
 * SIGTERM on a graceful deletion (a failing one is a FailedPreStopHook event), and init containers run one at a
 * time, in order, to completion before the app containers start (initContainerStatuses, the Initialized condition).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { amesh, kubectlIn, launchUp, removeCluster, upSkip, type LaunchedUp } from './helpers/amesh-up.js';
import { namespaces, object } from './helpers/manifests.js';
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
        // Healthy while `sick` is missing; every start removes it.
        pod('liveness', {
          terminationGracePeriodSeconds: 2,
          containers: [
            {
              name: 'app',
              command: idle(marker, `require('fs').rmSync('${file('sick')}', { force: true });`),
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
    await waitFor(
      'liveness running',
      async () => (await getPod('liveness')).status.containerStatuses?.[0]?.state.running !== undefined,
      60_000,
    );
    await writeFile(file('sick'), '');
    await waitFor(
      'liveness restarted',
      async () => {
        const s = (await getPod('liveness')).status.containerStatuses?.[0];
        return s?.restartCount === 1 && s.state.running !== undefined;
      },
      60_000,
    );
    const s = (await getPod('liveness')).status.containerStatuses![0]!;
    assert.ok(s.lastState?.terminated, 'the killed run is in lastState');
    assert.ok(!existsSync(file('sick')), 'the restarted container ran its command again');
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
});
