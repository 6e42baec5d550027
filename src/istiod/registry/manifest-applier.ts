/**
 * Applies a manifest directory to a Kubernetes API, as `kubectl apply --prune --applyset` would: every object the
 * directory registry holds (its last good version per object, fail-closed stand-ins included) is created or
 * patched, and objects this directory applied before and no longer defines are deleted. Membership follows
 * kubectl's ApplySet convention (KEP-3659): a parent ConfigMap `amesh-config-dir` in kube-system carries
 * `applyset.kubernetes.io/id` and the group-kinds it contains, and each member is labelled
 * `applyset.kubernetes.io/part-of`, so `kubectl` sees which objects the directory owns. Each member also keeps
 * `kubectl.kubernetes.io/last-applied-configuration`, from which the next apply computes a three-way merge patch
 * that leaves fields others set (a Service's allocated ClusterIP, a controller's annotation) alone.
 *
 * Pod status (podIP, phase) in a manifest is written through the `status` subresource after the pod, as a
 * kubelet would report it; owner references written by name get the owner's uid from the API.
 */
import { createHash } from 'node:crypto';
import { CoreV1Api, KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../../lib/log.js';
import { VERSION } from '../../lib/version.js';
import { objectKey, type Manifest } from './manifest-dir.js';
import type { Registry } from './registry.js';
import { threeWayMergePatch } from './three-way-merge-patch.js';

const PARENT = { name: 'amesh-config-dir', namespace: 'kube-system' } as const;
const PART_OF = 'applyset.kubernetes.io/part-of';
const APPLYSET_ID = 'applyset.kubernetes.io/id';
const CONTAINS = 'applyset.kubernetes.io/contains-group-kinds';
const ADDITIONAL_NAMESPACES = 'applyset.kubernetes.io/additional-namespaces';
const TOOLING = 'applyset.kubernetes.io/tooling';
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
/** Metadata the API owns; a manifest that carries it (a copied `kubectl get -o yaml`) must not fight the server. */
const SERVER_METADATA = ['uid', 'resourceVersion', 'generation', 'creationTimestamp', 'deletionTimestamp', 'managedFields', 'selfLink'];

/** The ApplySet id kubectl derives from the parent: base64url(sha256("<name>.<namespace>.<kind>.<group>")). */
export const APPLYSET = `applyset-${createHash('sha256').update(`${PARENT.name}.${PARENT.namespace}.ConfigMap.`).digest('base64url')}-v1`;

/** Owners before what they own, namespaces before everything; deletes run in the reverse order. */
const RANK: Readonly<Record<string, number>> = { Namespace: 0, Node: 0, ServiceAccount: 1, Deployment: 2, CronJob: 2, ReplicaSet: 3, Job: 3, Pod: 5 };
const rank = (kind: string): number => RANK[kind] ?? 4;

type Json = Record<string, unknown>;

export interface ApplyResult {
  readonly applied: number;
  readonly unchanged: number;
  readonly pruned: number;
  /** `file:line: kind ns/name: reason` for each object the API refused. */
  readonly errors: readonly string[];
}

/** `Kind.group` as an ApplySet names a group-kind: `Pod`, `Deployment.apps`. */
function groupKind(apiVersion: string, kind: string): string {
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  return group === '' ? kind : `${kind}.${group}`;
}

/** The version a group-kind that left the directory is served at: every kind amesh applies is served at v1. */
function servedVersion(gk: string): string {
  const dot = gk.indexOf('.');
  return dot < 0 ? 'v1' : `${gk.slice(dot + 1)}/v1`;
}

const statusOf = (e: unknown): number | undefined => (e as { code?: number }).code;
const messageOf = (e: unknown): string => {
  const body = (e as { body?: unknown }).body;
  if (typeof body === 'string') {
    try {
      return (JSON.parse(body) as { message?: string }).message ?? body;
    } catch {
      return body;
    }
  }
  return e instanceof Error ? e.message : String(e);
};

export class ManifestApplier {
  private readonly objects: KubernetesObjectApi;
  private readonly core: CoreV1Api;
  private running = Promise.resolve();

  constructor(
    private readonly registry: Registry,
    kc: KubeConfig,
    private readonly log: Logger,
  ) {
    this.objects = KubernetesObjectApi.makeApiClient(kc);
    this.core = kc.makeApiClient(CoreV1Api);
  }

  /** Applies after every change of the directory registry, one apply at a time. */
  follow(): void {
    this.registry.on('change', () => void this.apply());
  }

  /** Applies the registry's current objects; concurrent calls run one after another. */
  apply(): Promise<ApplyResult> {
    const run = this.running.then(() => this.applyOnce());
    this.running = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  private async applyOnce(): Promise<ApplyResult> {
    const desired = [...this.registry.all()].sort((a, b) => rank(a.kind) - rank(b.kind));
    const errors: string[] = [];
    let applied = 0;
    let unchanged = 0;
    const keep = new Set<string>();
    const versions = new Map<string, string>();
    for (const m of desired) {
      keep.add(objectKey(m));
      versions.set(groupKind(m.apiVersion, m.kind), m.apiVersion);
      try {
        if (await this.applyOne(m)) applied++;
        else unchanged++;
      } catch (e) {
        const msg = `${m.source}: ${m.kind} ${m.metadata.namespace === '' ? '' : m.metadata.namespace + '/'}${m.metadata.name}: the API refused it: ${messageOf(e)}`;
        errors.push(msg);
        this.log.error({ code: 'ISTIOD_ERR_MANIFEST' }, msg);
      }
    }
    const previous = await this.writeParent(desired, versions);
    const pruned = await this.prune(new Set([...previous, ...versions.keys()]), versions, keep, errors);
    this.log.info({ applied, unchanged, pruned, errors: errors.length }, 'config directory applied');
    return { applied, unchanged, pruned, errors };
  }

  /** Creates or patches one object; true when it changed anything. */
  private async applyOne(m: Manifest): Promise<boolean> {
    const doc = await this.documentOf(m);
    const header = { apiVersion: m.apiVersion, kind: m.kind, metadata: { name: m.metadata.name, ...(m.metadata.namespace === '' ? {} : { namespace: m.metadata.namespace }) } };
    const current = await this.objects.read(header).catch((e: unknown) => {
      if (statusOf(e) === 404) return undefined;
      throw e;
    });
    const lastApplied = JSON.stringify(doc);
    const body: Json = { ...doc, metadata: { ...(doc.metadata as Json), annotations: { ...((doc.metadata as Json).annotations as Json | undefined), [LAST_APPLIED]: lastApplied } } };
    let changed: boolean;
    if (current === undefined) {
      await this.objects.create(body);
      changed = true;
    } else {
      const previous = current.metadata?.annotations?.[LAST_APPLIED];
      const patch = threeWayMergePatch(previous === undefined ? undefined : JSON.parse(previous), body, current);
      changed = Object.keys(patch).length > 0;
      if (changed) await this.objects.patch({ ...patch, ...header }, undefined, undefined, undefined, undefined, PatchStrategy.MergePatch);
    }
    if (m.kind === 'Pod' && Object.keys(m.status).length > 0) changed = (await this.writePodStatus(m)) || changed;
    return changed;
  }

  /** The document to apply: as written, without server-owned metadata, labelled as a member, owners by uid. */
  private async documentOf(m: Manifest): Promise<Json> {
    const source: Json = m.document !== undefined ? { ...m.document } : { apiVersion: m.apiVersion, kind: m.kind, metadata: { ...m.metadata }, spec: m.spec };
    delete source.status;
    const meta: Json = Object.fromEntries(Object.entries((source.metadata ?? {}) as Json).filter(([k]) => !SERVER_METADATA.includes(k)));
    meta.name = m.metadata.name;
    if (m.metadata.namespace !== '') meta.namespace = m.metadata.namespace;
    meta.labels = { ...(meta.labels as Json | undefined), [PART_OF]: APPLYSET };
    const annotations = Object.fromEntries(Object.entries((meta.annotations ?? {}) as Json).filter(([k]) => k !== LAST_APPLIED));
    if (Object.keys(annotations).length > 0) meta.annotations = annotations;
    else delete meta.annotations;
    const owners = m.metadata.ownerReferences;
    if (owners !== undefined) {
      const resolved: Json[] = [];
      for (const o of owners) {
        const owner = await this.objects.read({ apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.name, namespace: m.metadata.namespace } }).catch(() => undefined);
        if (owner?.metadata?.uid === undefined) {
          this.log.warn(`${m.source}: owner ${o.kind} ${o.name} is not in the API; the reference is left out`);
          continue;
        }
        resolved.push({ ...o, uid: owner.metadata.uid });
      }
      if (resolved.length > 0) meta.ownerReferences = resolved;
      else delete meta.ownerReferences;
    }
    return { ...source, metadata: meta };
  }

  /** Writes the manifest's pod status through `pods/status`, as a kubelet reports it; true when it changed. */
  private async writePodStatus(m: Manifest): Promise<boolean> {
    const pod = await this.core.readNamespacedPod({ name: m.metadata.name, namespace: m.metadata.namespace });
    const status = { ...(pod.status as Json | undefined), ...m.status };
    if (JSON.stringify(status) === JSON.stringify(pod.status)) return false;
    pod.status = status;
    await this.core.replaceNamespacedPodStatus({ name: m.metadata.name, namespace: m.metadata.namespace, body: pod });
    return true;
  }

  /** Records the members' group-kinds and namespaces on the parent; returns the group-kinds it held before. */
  private async writeParent(desired: readonly Manifest[], versions: ReadonlyMap<string, string>): Promise<string[]> {
    const header = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: PARENT.name, namespace: PARENT.namespace } };
    const current = await this.objects.read(header).catch((e: unknown) => {
      if (statusOf(e) === 404) return undefined;
      throw e;
    });
    const previous = (current?.metadata?.annotations?.[CONTAINS] ?? '').split(',').filter((s) => s !== '');
    const namespaces = [...new Set(desired.map((m) => m.metadata.namespace).filter((n) => n !== '' && n !== PARENT.namespace))].sort();
    const annotations = { [TOOLING]: `amesh/${VERSION}`, [CONTAINS]: [...versions.keys()].sort().join(','), [ADDITIONAL_NAMESPACES]: namespaces.join(',') };
    const body = { ...header, metadata: { ...header.metadata, labels: { [APPLYSET_ID]: APPLYSET }, annotations } };
    if (current === undefined) await this.objects.create(body);
    else await this.objects.patch(body, undefined, undefined, undefined, undefined, PatchStrategy.MergePatch);
    return previous;
  }

  /** Deletes members of the set that the directory no longer defines, dependents first. */
  private async prune(groupKinds: ReadonlySet<string>, versions: ReadonlyMap<string, string>, keep: ReadonlySet<string>, errors: string[]): Promise<number> {
    const doomed: KubernetesObject[] = [];
    for (const gk of groupKinds) {
      const apiVersion = versions.get(gk) ?? servedVersion(gk);
      const kind = gk.includes('.') ? gk.slice(0, gk.indexOf('.')) : gk;
      const list = await this.objects.list(apiVersion, kind, undefined, undefined, undefined, undefined, undefined, `${PART_OF}=${APPLYSET}`);
      for (const o of list.items) {
        const key = `${kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
        if (!keep.has(key)) doomed.push({ ...o, apiVersion, kind });
      }
    }
    doomed.sort((a, b) => rank(b.kind ?? '') - rank(a.kind ?? ''));
    let pruned = 0;
    for (const o of doomed) {
      try {
        await this.objects.delete(o);
        pruned++;
      } catch (e) {
        if (statusOf(e) === 404) continue;
        errors.push(`${o.kind ?? ''} ${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}: cannot delete it: ${messageOf(e)}`);
      }
    }
    return pruned;
  }
}
