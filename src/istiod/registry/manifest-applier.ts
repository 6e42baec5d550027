/**
 * Applies a manifest directory to a Kubernetes API, as `kubectl apply --prune --applyset` would: every object the
 * `ManifestDirectory` holds (its last good version per object, fail-closed stand-ins included) is created or
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
import {
  CoreV1Api,
  KubernetesObjectApi,
  PatchStrategy,
  type KubeConfig,
  type KubernetesObject,
  type V1Pod,
} from '@kubernetes/client-node';
import type { Logger } from '../../lib/log.js';
import { VERSION } from '../../lib/version.js';
import { objectKey, type Manifest, type RejectedObject } from './manifest-dir.js';
import { forEachLimited } from '../../lib/for-each-limited.js';
import type { ManifestDirectory } from './manifest-directory.js';
import { threeWayMergePatch } from './three-way-merge-patch.js';

const PARENT = { name: 'amesh-config-dir', namespace: 'kube-system' } as const;
const PARENT_HEADER = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: PARENT.name, namespace: PARENT.namespace },
};
const PART_OF = 'applyset.kubernetes.io/part-of';
const APPLYSET_ID = 'applyset.kubernetes.io/id';
const CONTAINS = 'applyset.kubernetes.io/contains-group-kinds';
const ADDITIONAL_NAMESPACES = 'applyset.kubernetes.io/additional-namespaces';
const TOOLING = 'applyset.kubernetes.io/tooling';
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
/** Metadata the API owns; a manifest that carries it (a copied `kubectl get -o yaml`) must not fight the server. */
const SERVER_METADATA = [
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'managedFields',
  'selfLink',
];

/** The ApplySet id kubectl derives from the parent: base64url(sha256("<name>.<namespace>.<kind>.<group>")). */
export const APPLYSET = `applyset-${createHash('sha256').update(`${PARENT.name}.${PARENT.namespace}.ConfigMap.`).digest('base64url')}-v1`;

/** Owners before what they own, namespaces before everything; deletes run in the reverse order. */
const RANK: Readonly<Record<string, number>> = {
  Namespace: 0,
  Node: 0,
  ServiceAccount: 1,
  Deployment: 2,
  CronJob: 2,
  ReplicaSet: 3,
  Job: 3,
  Pod: 5,
};
const rank = (kind: string): number => RANK[kind] ?? 4;
/** Objects of one rank go to the API this many at a time: each write waits for its commit's fsync, which concurrent writes share. */
const APPLY_CONCURRENCY = 16;
/** Kinds that fail closed when the API refuses them, as when the directory does (`fail-closed-stand-in.ts`). */
const FAIL_CLOSED_KINDS = new Set(['AuthorizationPolicy', 'PeerAuthentication']);

/** Manifests grouped by rank, lowest first. */
function byRank(ms: readonly Manifest[]): Manifest[][] {
  const groups = new Map<number, Manifest[]>();
  for (const m of ms) {
    const group = groups.get(rank(m.kind));
    if (group === undefined) groups.set(rank(m.kind), [m]);
    else group.push(m);
  }
  return [...groups.keys()].sort((a, b) => a - b).map((r) => groups.get(r)!);
}

type Json = Record<string, unknown>;

export interface ApplyResult {
  readonly applied: number;
  readonly unchanged: number;
  readonly pruned: number;
  /** `file:line: kind ns/name: reason` for each object the API refused. */
  readonly errors: readonly string[];
  /** Policies the API refused: what istiod's config store must stand in for, fail-closed. */
  readonly refused: readonly RejectedObject[];
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

/** True when every field `want` sets has the same value in `have`: fields only `have` holds are ignored. */
function contains(have: unknown, want: unknown): boolean {
  if (Array.isArray(want))
    return Array.isArray(have) && have.length === want.length && want.every((w, i) => contains(have[i], w));
  if (want !== null && typeof want === 'object')
    return (
      have !== null &&
      typeof have === 'object' &&
      !Array.isArray(have) &&
      Object.entries(want).every(([k, v]) => contains((have as Json)[k], v))
    );
  return have === want;
}

/** Counts one apply's outcome. */
class ApplyTally {
  applied = 0;
  unchanged = 0;
  pruned = 0;
  readonly errors: string[] = [];
  readonly refused: RejectedObject[] = [];

  report(log: Logger): ApplyResult {
    log.info(
      { applied: this.applied, unchanged: this.unchanged, pruned: this.pruned, errors: this.errors.length },
      'config directory applied',
    );
    return {
      applied: this.applied,
      unchanged: this.unchanged,
      pruned: this.pruned,
      errors: this.errors,
      refused: this.refused,
    };
  }
}

/** The HTTP status the API answered with; undefined when it did not answer (a Node error's `code` is a string). */
const statusOf = (e: unknown): number | undefined => {
  const code = (e as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
};
/**
 * True when the API answered and refused the request itself (a 4xx other than 429 Too Many Requests): asking again
 * gets the same answer. Anything else (a 5xx, 429, no answer) may pass on a retry, so it fails the whole apply.
 */
const refusedByApi = (e: unknown): boolean => {
  const status = statusOf(e);
  return status !== undefined && status >= 400 && status < 500 && status !== 429;
};
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
  /** The apiVersion of each object applied or found in the set, by key: what a key that left is deleted at. */
  private readonly appliedVersions = new Map<string, string>();
  /** The parent's annotations as last written, so an apply that changes no membership does not rewrite them. */
  private parentWritten: string | undefined;

  constructor(
    private readonly directory: ManifestDirectory,
    kc: KubeConfig,
    private readonly log: Logger,
    /** Pruned pods are deleted with grace 0: no kubelet runs them (DirectoryApplierOptions.podsWithoutKubelets). */
    private readonly podsWithoutKubelets = false,
  ) {
    this.objects = KubernetesObjectApi.makeApiClient(kc);
    this.core = kc.makeApiClient(CoreV1Api);
  }

  /**
   * Applies the directory's current objects, all of them (listing the set's members to find what to prune), or
   * only the objects at `keys` (each as the directory holds it when the apply runs; a key it no longer holds is
   * deleted if it is a member). Calls run one after another. What the API refuses is in the result; an error a
   * retry may clear (a 5xx, no answer) rejects, and the objects not reached are then left for that retry.
   */
  apply(keys?: ReadonlySet<string>): Promise<ApplyResult> {
    const run = this.running.then(() => (keys === undefined ? this.applyAll() : this.applyKeys(keys)));
    this.running = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** Resolves once no apply is running or queued. */
  idle(): Promise<void> {
    return this.running;
  }

  private async applyAll(): Promise<ApplyResult> {
    const desired = [...this.directory.all()];
    const result = new ApplyTally();
    const keep = new Set(desired.map(objectKey));
    const versions = new Map(desired.map((m) => [groupKind(m.apiVersion, m.kind), m.apiVersion]));
    const previous = await this.previousGroupKinds();
    const members = await this.listMembers(new Set([...previous, ...versions.keys()]), versions);
    await this.applyEach(desired, members, result);
    await this.writeParent(desired);
    const doomed = [...members.values()].filter(
      (o) => !keep.has(`${o.kind ?? ''}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`),
    );
    result.pruned = await this.prune(doomed, result.errors);
    return result.report(this.log);
  }

  private async applyKeys(keys: ReadonlySet<string>): Promise<ApplyResult> {
    const result = new ApplyTally();
    const desired: Manifest[] = [];
    const doomed: KubernetesObject[] = [];
    for (const key of keys) {
      const m = this.directory.get(key);
      if (m !== undefined) {
        desired.push(m);
        continue;
      }
      const apiVersion = this.appliedVersions.get(key);
      if (apiVersion === undefined) continue;
      const [kind = '', namespace = '', name = ''] = key.split('/');
      const current = await this.readIfExists({
        apiVersion,
        kind,
        metadata: { name, ...(namespace === '' ? {} : { namespace }) },
      });
      if (current?.metadata?.labels?.[PART_OF] === APPLYSET) doomed.push({ ...current, apiVersion, kind });
    }
    await this.applyEach(desired, new Map(), result);
    await this.writeParent(this.directory.all());
    result.pruned = await this.prune(doomed, result.errors);
    return result.report(this.log);
  }

  /**
   * Applies `desired`, owners before what they own, each rank `APPLY_CONCURRENCY` at a time. An object the API
   * refuses is reported and the rest still applies; any other error fails the apply once its rank is done.
   */
  private async applyEach(
    desired: readonly Manifest[],
    members: ReadonlyMap<string, KubernetesObject>,
    result: ApplyTally,
  ): Promise<void> {
    for (const group of byRank(desired)) {
      let failure: { error: unknown } | undefined;
      await forEachLimited(group, APPLY_CONCURRENCY, async (m) => {
        try {
          if (await this.applyOne(m, members.get(objectKey(m)))) result.applied++;
          else result.unchanged++;
          this.appliedVersions.set(objectKey(m), m.apiVersion);
        } catch (e) {
          if (!refusedByApi(e)) {
            failure ??= { error: e };
            return;
          }
          const msg = `${m.source}: ${m.kind} ${m.metadata.namespace === '' ? '' : m.metadata.namespace + '/'}${m.metadata.name}: the API refused it: ${messageOf(e)}`;
          result.errors.push(msg);
          this.log.error({ code: 'ISTIOD_ERR_MANIFEST' }, msg);
          if (FAIL_CLOSED_KINDS.has(m.kind))
            result.refused.push({
              key: objectKey(m),
              kind: m.kind,
              namespace: m.metadata.namespace,
              name: m.metadata.name,
              source: m.source,
            });
        }
      });
      if (failure !== undefined) throw failure.error;
    }
  }

  /** Creates or patches one object; true when it changed anything. */
  private async applyOne(m: Manifest, member: KubernetesObject | undefined): Promise<boolean> {
    const doc = await this.documentOf(m);
    const header = {
      apiVersion: m.apiVersion,
      kind: m.kind,
      metadata: { name: m.metadata.name, ...(m.metadata.namespace === '' ? {} : { namespace: m.metadata.namespace }) },
    };
    // An object not yet in the set may still exist (created by hand, or by an earlier apply that was cut short).
    const current = member ?? (await this.readIfExists(header));
    const lastApplied = JSON.stringify(doc);
    const body: Json = {
      ...doc,
      metadata: {
        ...(doc.metadata as Json),
        annotations: { ...((doc.metadata as Json).annotations as Json | undefined), [LAST_APPLIED]: lastApplied },
      },
    };
    let changed = true;
    let after: KubernetesObject;
    if (current === undefined) {
      after = await this.objects.create(body);
    } else {
      const previous = current.metadata?.annotations?.[LAST_APPLIED];
      const patch = threeWayMergePatch(previous === undefined ? undefined : JSON.parse(previous), body, current);
      changed = Object.keys(patch).length > 0;
      // The patch's own metadata changes (labels, annotations) go with the name that addresses it.
      after = changed
        ? await this.objects.patch(
            { ...patch, ...header, metadata: { ...(patch.metadata as Json | undefined), ...header.metadata } },
            undefined,
            undefined,
            undefined,
            undefined,
            PatchStrategy.MergePatch,
          )
        : current;
    }
    if (m.kind === 'Pod' && Object.keys(m.status).length > 0)
      changed = (await this.writePodStatus(m, after)) || changed;
    return changed;
  }

  /** The document to apply: as written, without server-owned metadata, labelled as a member, owners by uid. */
  private async documentOf(m: Manifest): Promise<Json> {
    const source: Json =
      m.document !== undefined
        ? { ...m.document }
        : { apiVersion: m.apiVersion, kind: m.kind, metadata: { ...m.metadata }, spec: m.spec };
    delete source.status;
    const meta: Json = Object.fromEntries(
      Object.entries((source.metadata ?? {}) as Json).filter(([k]) => !SERVER_METADATA.includes(k)),
    );
    meta.name = m.metadata.name;
    if (m.metadata.namespace !== '') meta.namespace = m.metadata.namespace;
    meta.labels = { ...(meta.labels as Json | undefined), [PART_OF]: APPLYSET };
    const annotations = Object.fromEntries(
      Object.entries((meta.annotations ?? {}) as Json).filter(([k]) => k !== LAST_APPLIED),
    );
    if (Object.keys(annotations).length > 0) meta.annotations = annotations;
    else delete meta.annotations;
    const owners = m.metadata.ownerReferences;
    if (owners !== undefined) {
      const resolved: Json[] = [];
      for (const o of owners) {
        // Only a 404 means there is no such owner; any other error fails the apply, so the retry resolves it.
        const owner = await this.readIfExists({
          apiVersion: o.apiVersion,
          kind: o.kind,
          metadata: { name: o.name, namespace: m.metadata.namespace },
        });
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
  private async writePodStatus(m: Manifest, pod: V1Pod): Promise<boolean> {
    // The server may add to what the manifest reports (timestamps, defaults); only a field the manifest sets
    // differently is a change.
    const have = JSON.parse(JSON.stringify(pod.status ?? {})) as unknown;
    if (contains(have, m.status)) return false;
    const status: Json = { ...(have as Json), ...m.status };
    pod.status = status;
    await this.core.replaceNamespacedPodStatus({ name: m.metadata.name, namespace: m.metadata.namespace, body: pod });
    return true;
  }

  private async readIfExists(o: {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace?: string };
  }): Promise<KubernetesObject | undefined> {
    return this.objects.read(o).catch((e: unknown) => {
      if (statusOf(e) === 404) return undefined;
      throw e;
    });
  }

  /** The group-kinds the parent recorded at the last apply: members of those may now be due for pruning. */
  private async previousGroupKinds(): Promise<string[]> {
    const parent = await this.readIfExists(PARENT_HEADER);
    return (parent?.metadata?.annotations?.[CONTAINS] ?? '').split(',').filter((s) => s !== '');
  }

  /** Every member of the set, by object key, with one labelled list per group-kind. */
  private async listMembers(
    groupKinds: ReadonlySet<string>,
    versions: ReadonlyMap<string, string>,
  ): Promise<Map<string, KubernetesObject>> {
    const out = new Map<string, KubernetesObject>();
    for (const gk of groupKinds) {
      const apiVersion = versions.get(gk) ?? servedVersion(gk);
      const kind = gk.includes('.') ? gk.slice(0, gk.indexOf('.')) : gk;
      // A kind the API does not serve has no members; applying its documents reports them.
      const list = await this.objects
        .list(apiVersion, kind, undefined, undefined, undefined, undefined, undefined, `${PART_OF}=${APPLYSET}`)
        .catch((e: unknown) => {
          if (statusOf(e) === 404) return { items: [] };
          throw e;
        });
      for (const o of list.items) {
        const key = `${kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
        out.set(key, { ...o, apiVersion, kind });
        this.appliedVersions.set(key, apiVersion);
      }
    }
    return out;
  }

  /** Records the members' group-kinds and namespaces on the parent, when they differ from what it was last given. */
  private async writeParent(desired: readonly Manifest[]): Promise<void> {
    const groupKinds = [...new Set(desired.map((m) => groupKind(m.apiVersion, m.kind)))].sort();
    const namespaces = [
      ...new Set(desired.map((m) => m.metadata.namespace).filter((n) => n !== '' && n !== PARENT.namespace)),
    ].sort();
    const annotations = {
      [TOOLING]: `amesh/${VERSION}`,
      [CONTAINS]: groupKinds.join(','),
      [ADDITIONAL_NAMESPACES]: namespaces.join(','),
    };
    const text = JSON.stringify(annotations);
    if (text === this.parentWritten) return;
    const current = await this.readIfExists(PARENT_HEADER);
    const body = {
      ...PARENT_HEADER,
      metadata: { ...PARENT_HEADER.metadata, labels: { [APPLYSET_ID]: APPLYSET }, annotations },
    };
    if (current === undefined) await this.objects.create(body);
    else await this.objects.patch(body, undefined, undefined, undefined, undefined, PatchStrategy.MergePatch);
    this.parentWritten = text;
  }

  /**
   * Deletes members of the set that the directory no longer defines, dependents first. A delete the API refuses is
   * reported; any other error fails the apply.
   */
  private async prune(doomed: KubernetesObject[], errors: string[]): Promise<number> {
    doomed.sort((a, b) => rank(b.kind ?? '') - rank(a.kind ?? ''));
    let pruned = 0;
    for (const o of doomed) {
      try {
        // A pod no kubelet runs would stay Terminating: its deletion is confirmed at once, as its kubelet would.
        const grace = o.kind === 'Pod' && this.podsWithoutKubelets ? 0 : undefined;
        await this.objects.delete(o, undefined, undefined, grace);
        pruned++;
      } catch (e) {
        if (statusOf(e) === 404) continue;
        if (!refusedByApi(e)) throw e;
        errors.push(
          `${o.kind ?? ''} ${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}: cannot delete it: ${messageOf(e)}`,
        );
      }
    }
    return pruned;
  }
}
