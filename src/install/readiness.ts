/**
 * Waiting for a component's objects to be ready, as istioctl waits (istio operator/pkg/install/wait.go): checked at
 * once, then every 2 s until the readiness timeout. Ready means:
 * - a Deployment: its current ReplicaSet (the one its `deployment.kubernetes.io/revision` names, once the controller
 *   has seen its latest generation) has as many ready replicas as the Deployment wants; when not, the newest pod's
 *   waiting container or unready condition says why;
 * - a DaemonSet: its controller has seen its latest generation, and with RollingUpdate it schedules at least one
 *   pod, every scheduled pod is ready and updated (with OnDelete, every one updated);
 * - a CustomResourceDefinition: Established; on an API server that reports no conditions, its resource is served;
 * - a Namespace: Active.
 * Anything else is ready once applied.
 */
import { MeshError } from '../lib/errors.js';
import { isRecord } from '../lib/record.js';
import { textAt, type RenderedObject } from './chart-helpers.js';
import { objectId, type LiveObject } from './cluster-client.js';
import {
  CRD_KIND,
  NAMESPACE_KIND,
  POD_KIND,
  REPLICA_SET_KIND,
  installKind,
  type InstallKind,
} from './install-kinds.js';
import { selectorOf } from './owner-labels.js';
import { at, type Tree } from './value-tree.js';

/** What readiness reads of the cluster. */
export interface ClusterReader {
  get(kind: InstallKind, namespace: string | undefined, name: string): Promise<LiveObject | undefined>;
  list(kind: InstallKind, labelSelector: string, namespace?: string): Promise<LiveObject[]>;
  serves(groupVersion: string, plural: string): Promise<boolean>;
}

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const SYSTEM_CLOCK: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
};

/** istioctl polls every 2 s. */
export const POLL_INTERVAL_MS = 2_000;

const REVISION_ANNOTATION = 'deployment.kubernetes.io/revision';

interface Check {
  readonly ready: boolean;
  /** Why not, when the cluster says (a pod's waiting reason). */
  readonly why?: string;
}

const num = (o: unknown, path: string): number => {
  const v = at(o, path);
  return typeof v === 'number' ? v : 0;
};

async function podFailure(
  reader: ClusterReader,
  namespace: string,
  selector: Record<string, string>,
): Promise<string | undefined> {
  const pods = await reader.list(POD_KIND, selectorOf(selector), namespace);
  const newest = [...pods].sort((a, b) =>
    textAt(b, 'metadata.creationTimestamp').localeCompare(textAt(a, 'metadata.creationTimestamp')),
  );
  for (const pod of newest) {
    const statuses = (at(pod, 'status.containerStatuses') as Tree[] | undefined) ?? [];
    for (const s of statuses) {
      const waiting = at(s, 'state.waiting');
      if (isRecord(waiting))
        return `container failed to start: ${textAt(waiting, 'reason')}: ${textAt(waiting, 'message')}`;
    }
    const conditions = (at(pod, 'status.conditions') as Tree[] | undefined) ?? [];
    const readyCondition = conditions.find((c) => c['type'] === 'Ready');
    if (readyCondition?.['status'] === 'False') return textAt(readyCondition, 'message');
  }
  return undefined;
}

async function deploymentReady(reader: ClusterReader, o: RenderedObject): Promise<Check> {
  const namespace = o.metadata.namespace ?? '';
  const d = await reader.get(installKind('apps/v1', 'Deployment'), namespace, o.metadata.name);
  if (d === undefined) return { ready: false };
  const selector = (at(d, 'spec.selector.matchLabels') ?? {}) as Record<string, string>;
  const revision = d.metadata.annotations?.[REVISION_ANNOTATION];
  const generation = num(d, 'metadata.generation');
  let ready = false;
  if (revision !== undefined && num(d, 'status.observedGeneration') >= generation) {
    const sets = await reader.list(REPLICA_SET_KIND, selectorOf(selector), namespace);
    const current = sets.find(
      (rs) =>
        rs.metadata.annotations?.[REVISION_ANNOTATION] === revision &&
        ((at(rs, 'metadata.ownerReferences') as Tree[] | undefined) ?? []).some((r) => r['uid'] === d.metadata.uid),
    );
    const wanted = typeof at(d, 'spec.replicas') === 'number' ? num(d, 'spec.replicas') : 1;
    ready = current !== undefined && num(current, 'status.readyReplicas') >= wanted;
  }
  if (ready) return { ready };
  return { ready, why: await podFailure(reader, namespace, selector) };
}

async function daemonSetReady(reader: ClusterReader, o: RenderedObject): Promise<Check> {
  const ds = await reader.get(installKind('apps/v1', 'DaemonSet'), o.metadata.namespace, o.metadata.name);
  if (ds === undefined || num(ds, 'status.observedGeneration') !== num(ds, 'metadata.generation'))
    return { ready: false };
  const desired = num(ds, 'status.desiredNumberScheduled');
  const updated = num(ds, 'status.updatedNumberScheduled');
  if (at(ds, 'spec.updateStrategy.type') === 'OnDelete') return { ready: updated === desired };
  return { ready: desired > 0 && num(ds, 'status.numberReady') >= desired && updated === desired };
}

async function crdReady(reader: ClusterReader, o: RenderedObject): Promise<Check> {
  const crd = await reader.get(CRD_KIND, undefined, o.metadata.name);
  if (crd === undefined) return { ready: false };
  const conditions = (at(crd, 'status.conditions') as Tree[] | undefined) ?? [];
  const established = conditions.find((c) => c['type'] === 'Established');
  if (established !== undefined) return { ready: established['status'] === 'True' };
  const group = textAt(crd, 'spec.group');
  const plural = textAt(crd, 'spec.names.plural');
  const versions = ((at(crd, 'spec.versions') as Tree[] | undefined) ?? []).filter((v) => v['served'] === true);
  for (const v of versions) if (await reader.serves(`${group}/${textAt(v, 'name')}`, plural)) return { ready: true };
  return { ready: false };
}

async function namespaceReady(reader: ClusterReader, o: RenderedObject): Promise<Check> {
  const ns = await reader.get(NAMESPACE_KIND, undefined, o.metadata.name);
  return { ready: at(ns, 'status.phase') === 'Active' };
}

const CHECKS: Readonly<Record<string, (reader: ClusterReader, o: RenderedObject) => Promise<Check>>> = {
  Deployment: deploymentReady,
  DaemonSet: daemonSetReady,
  CustomResourceDefinition: crdReady,
  Namespace: namespaceReady,
};

/** The objects not ready yet, each `Kind/namespace/name` with why when known. */
export async function notReady(reader: ClusterReader, objects: readonly RenderedObject[]): Promise<string[]> {
  const out: string[] = [];
  for (const o of objects) {
    const check = CHECKS[o.kind];
    if (check === undefined) continue;
    const r = await check(reader, o);
    if (!r.ready) out.push(r.why === undefined || r.why === '' ? objectId(o) : `${objectId(o)} (${r.why})`);
  }
  return out;
}

/** A duration as Go prints one (`5m0s`, `1s`, `1m30s`, `500ms`): istioctl's messages show --readiness-timeout so. */
export function goDuration(ms: number): string {
  if (ms < 1000) return `${String(ms)}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  return `${h > 0 ? `${String(h)}h` : ''}${h > 0 || m > 0 ? `${String(m)}m` : ''}${String(s)}s`;
}

/**
 * Waits until `objects` are ready, telling `onWaiting` what is not; INSTALL_ERR_NOT_READY after `timeoutMs`,
 * naming each object that is not ready.
 */
export async function waitForReady(
  reader: ClusterReader,
  objects: readonly RenderedObject[],
  o: { timeoutMs: number; clock?: Clock; onWaiting?: (ids: readonly string[]) => void },
): Promise<void> {
  const clock = o.clock ?? SYSTEM_CLOCK;
  const deadline = clock.now() + o.timeoutMs;
  for (;;) {
    const waiting = await notReady(reader, objects);
    if (waiting.length === 0) return;
    o.onWaiting?.(waiting);
    const remaining = deadline - clock.now();
    if (remaining <= 0)
      throw new MeshError(
        'INSTALL_ERR_NOT_READY',
        `resources not ready after ${goDuration(o.timeoutMs)}:\n${waiting.map((w) => `  ${w}`).join('\n')}`,
      );
    await clock.sleep(Math.min(POLL_INTERVAL_MS, remaining));
  }
}
