/**
 * The embedded API server with controllers of `amesh controller-manager` running in the test's process on one
 * SharedInformerFactory, as the controller tests drive them, and what a kubelet would report of the pods they make
 * (their status, and the confirmation that ends a graceful deletion).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { ApiServer } from '../../src/apiserver/api-server.js';
import { SharedInformerFactory } from '../../src/kube/shared-informer-factory.js';
import type { LogControl } from '../../src/lib/log.js';
import { silentLogs } from './captured-logs.js';
import { DeletedPodConfirmer } from './deleted-pod-confirmer.js';
import { startApiServer } from './in-process.js';

interface Controller {
  readonly synced: Promise<void>;
  start(): void;
  stop(): void;
}

export interface ControllerFixture {
  readonly api: ApiServer;
  readonly kc: k8s.KubeConfig;
  readonly core: k8s.CoreV1Api;
  readonly apps: k8s.AppsV1Api;
  /** Stops the controllers, their informers and the API server, and removes its data. */
  stop(): Promise<void>;
}

/** An API server in a fresh directory and the controllers `make` returns, started and synced. */
export async function startControllers(
  name: string,
  make: (kc: k8s.KubeConfig, informers: SharedInformerFactory, logs: LogControl) => Controller[],
): Promise<ControllerFixture> {
  const dir = await mkdtemp(path.join(tmpdir(), `amesh-${name}-`));
  const api = await startApiServer(path.join(dir, 'data'));
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(api.kubeconfigPath);
  const logs = silentLogs('controllers');
  const informers = new SharedInformerFactory(kc, logs.scope('informers'));
  const controllers = make(kc, informers, logs);
  const confirmer = new DeletedPodConfirmer(kc, logs.scope('kubelet'));
  for (const c of controllers) c.start();
  informers.start();
  await Promise.all([...controllers.map((c) => c.synced), confirmer.start()]);
  return {
    api,
    kc,
    core: kc.makeApiClient(k8s.CoreV1Api),
    apps: kc.makeApiClient(k8s.AppsV1Api),
    async stop() {
      for (const c of controllers) c.stop();
      await confirmer.stop();
      await informers.stop();
      await api.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const MERGE = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

/** What a kubelet reports through `pods/status` once pods run and pass readiness, or once they have failed. */
export async function reportPods(
  core: k8s.CoreV1Api,
  pods: readonly k8s.V1Pod[],
  phase: 'Running' | 'Failed' = 'Running',
): Promise<void> {
  for (const p of pods)
    await core.patchNamespacedPodStatus(
      {
        name: p.metadata?.name ?? '',
        namespace: p.metadata?.namespace ?? '',
        body: { status: { phase, conditions: [{ type: 'Ready', status: phase === 'Running' ? 'True' : 'False' }] } },
      },
      MERGE,
    );
}

/** The pods not reported Ready yet. */
export const unready = (pods: readonly k8s.V1Pod[]): k8s.V1Pod[] =>
  pods.filter((p) => p.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True');
