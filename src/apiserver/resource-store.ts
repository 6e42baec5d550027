/**
 * The resource store, after k8s.io/apiserver's generic registry `Store` (pkg/registry/generic/registry/store.go):
 * what every verb does to an object of any kind between the HTTP layer and the storage. Create fills the system fields (name from
 * generateName, uid, creationTimestamp), runs the kind's strategy and validation, and checks the namespace.
 * Update and patch keep the system fields, honour resourceVersion preconditions (409 Conflict), carry status
 * over (or only status for the status subresource) and validate the change. Delete honours finalizers and
 * preconditions. Lists and watches filter by label and field selectors.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../lib/log.js';
import { isRecord } from '../lib/record.js';
import { randomSafeString } from '../lib/safe-encode.js';
import { ApiError, invalid, type StatusCause } from './api-error.js';
import { apiVersionOf, findKind, storageKey, storagePrefix } from './kinds.js';
import { mountServiceAccountToken } from './service-account-admission.js';
import { SCALE_KIND, applyScale, scaleOf } from './scale-subresource.js';
import type { KindInfo } from './kind-info.js';
import type { KubeList, KubeObject } from './kube-object.js';
import type { Storage, StorageEvent } from './storage.js';
import { parseLabelSelector } from './label-selector.js';
import { parseFieldSelector } from './field-selector.js';
import { applyJsonPatch } from './json-patch.js';
import { applyMergePatch } from './merge-patch.js';
import { applyStrategicMergePatch, supportsStrategicMergePatch } from './strategic-merge-patch.js';
import { ensureRequestNamespace, validateObjectMeta, validateObjectMetaUpdate } from './validation/object-meta.js';
import { decodeError } from './validation/decode.js';
import type { ClusterIpAllocator } from './cluster-ip-allocator.js';
import type { NodePortAllocator } from './node-port-allocator.js';
import { kubeTime } from '../lib/kube-time.js';
import { beforeDelete } from './graceful-delete.js';
import type { AdmissionContext, AdmissionAttributes, WebhookAdmission } from './admission/webhook-admission.js';
import type { AdmissionOperation } from './admission/webhook-rules.js';
import type { UserInfo } from './auth/user-info.js';

export const PATCH_TYPES = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
} as const;

export type PatchType = keyof typeof PATCH_TYPES;

function applyPatch(type: PatchType, current: KubeObject, patch: unknown, k: KindInfo): KubeObject {
  if (type === 'json') return applyJsonPatch(current, patch);
  if (type === 'merge') return applyMergePatch(current, patch);
  return applyStrategicMergePatch(current, patch, k);
}

export interface ListOptions {
  readonly labelSelector?: string | undefined;
  readonly fieldSelector?: string | undefined;
}

export interface WriteOptions {
  /** `status`, or `finalize` for a Namespace; the main resource when absent. */
  readonly subresource?: string | undefined;
  /** `dryRun=All`: everything a write does, validation included, except storing it. */
  readonly dryRun?: boolean | undefined;
  /** A client's request: admission webhooks see it. Writes of the server's own have none. */
  readonly context?: AdmissionContext | undefined;
}

export interface DeleteOptions {
  readonly dryRun?: boolean | undefined;
  readonly preconditions?: { resourceVersion?: string; uid?: string } | undefined;
  /**
   * `Orphan` leaves dependents and strips their owner reference; `Foreground` deletes them before the object;
   * `Background` (or nothing, for most kinds) deletes the object and then them.
   */
  readonly propagationPolicy?: string | undefined;
  /** DeleteOptions.gracePeriodSeconds: for kinds deleted gracefully (pods), how long the object has to terminate. */
  readonly gracePeriodSeconds?: number | undefined;
  /** A client's request: admission webhooks see it. */
  readonly context?: AdmissionContext | undefined;
}

/** A filtered event as a watch sends it. */
export interface ResourceEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: KubeObject;
}

type Matcher = (obj: KubeObject) => boolean;

/** The parts of a write's admission attributes known before the object is. */
type AdmissionRequest = Pick<AdmissionAttributes, 'kind' | 'subresource' | 'operation' | 'context'>;

/** A delete that keeps losing to concurrent writes gives up with 409 after this many tries, as GuaranteedUpdate would. */
const DELETE_ATTEMPTS = 16;

/** Namespaces the API server keeps (namespace strategy's immortal namespaces). */
const IMMORTAL_NAMESPACES = new Set(['default', 'kube-system', 'kube-public']);

/** An update whose admission took so long that the object kept changing gives up with 409 after this many tries. */
const ADMITTED_UPDATE_ATTEMPTS = 8;

/** Thrown out of a guaranteed update whose result would be deleted at once: delete instead. */
class RemoveInstead extends Error {}
/** The finalizer a Foreground delete holds its object with (metav1.FinalizerDeleteDependents). */
export const FOREGROUND_DELETION = 'foregroundDeletion';
/** generateName adds this many name-safe random characters (`lib/safe-encode.ts`). */
const NAME_SUFFIX_LENGTH = 5;
/** Kubernetes truncates generateName so that name plus suffix stays within 63 characters. */
const MAX_GENERATED_NAME_PREFIX = 63 - NAME_SUFFIX_LENGTH;

const NAMESPACES = mustKind('', 'v1', 'namespaces');
const PODS = mustKind('', 'v1', 'pods');
const SERVICES = mustKind('', 'v1', 'services');
const SERVICE_ACCOUNTS = mustKind('', 'v1', 'serviceaccounts');

function mustKind(group: string, version: string, plural: string): KindInfo {
  const k = findKind(group, version, plural);
  if (k === undefined) throw new Error(`kinds table lacks ${plural}`);
  return k;
}

/** `pods`, `deployments.apps`: how Kubernetes names a resource in messages. */
export function qualifiedResource(k: KindInfo): string {
  return k.group === '' ? k.plural : `${k.plural}.${k.group}`;
}

function clone<T>(v: T): T {
  return structuredClone(v);
}

export class ResourceStore {
  /** Strips owner references to a deleted owner from its dependents (the garbage collector's, for Orphan deletes). */
  orphanDependents: ((ownerUid: string) => Promise<void>) | undefined;
  /** The admission webhooks clients' writes go through. */
  admission: WebhookAdmission | undefined;
  /**
   * Checks a client's create or update of an object before its validation, throwing to refuse it (RBAC's
   * escalation check); `old` is the stored object of an update.
   */
  guardWrite: ((k: KindInfo, obj: KubeObject, old: KubeObject | undefined, user: UserInfo) => void) | undefined;

  constructor(
    private readonly storage: Storage,
    private readonly clusterIps: ClusterIpAllocator,
    private readonly nodePorts: NodePortAllocator,
    private readonly log: Logger,
  ) {}

  /** A new Service's cluster IP and node ports; what one took is given back when the other refuses. */
  private allocate(svc: KubeObject): void {
    this.clusterIps.allocate(svc);
    try {
      this.nodePorts.allocate(svc);
    } catch (e) {
      this.clusterIps.release(svc);
      throw e;
    }
  }

  private releaseAllocations(svc: KubeObject): void {
    this.clusterIps.release(svc);
    this.nodePorts.release(svc);
  }

  /** The current store revision: the resourceVersion a list made now would carry. */
  revision(): number {
    return this.storage.revision();
  }

  get(k: KindInfo, namespace: string | undefined, name: string): KubeObject {
    const o = this.storage.get(storageKey(k, namespace, name));
    if (o === undefined) throw this.notFound(k, name);
    return o;
  }

  find(k: KindInfo, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.storage.get(storageKey(k, namespace, name));
  }

  /** The ServiceAccount pod `obj` runs as, if it exists. */
  private serviceAccountOf(obj: KubeObject): KubeObject | undefined {
    const name = (obj.spec as { serviceAccountName?: unknown } | undefined)?.serviceAccountName;
    return typeof name === 'string' ? this.find(SERVICE_ACCOUNTS, obj.metadata.namespace, name) : undefined;
  }

  list(k: KindInfo, namespace: string | undefined, opts: ListOptions = {}): KubeList {
    const match = this.matcher(k, opts);
    const { items, revision } = this.storage.list(storagePrefix(k, namespace));
    return {
      apiVersion: apiVersionOf(k),
      kind: `${k.kind}List`,
      metadata: { resourceVersion: String(revision) },
      items: match === undefined ? items : items.filter(match),
    };
  }

  async create(
    k: KindInfo,
    namespace: string | undefined,
    body: KubeObject,
    dryRun = false,
    context?: AdmissionContext,
  ): Promise<KubeObject> {
    let obj = this.checkBody(k, body);
    this.pruneFields(k, obj, context, (unknown) => this.strictDecodingError(context?.requestKind ?? k, unknown));
    ensureRequestNamespace(k, obj, namespace);
    if (obj.metadata.resourceVersion !== undefined && obj.metadata.resourceVersion !== '')
      throw new ApiError('BadRequest', 'resourceVersion should not be set on objects to be created');
    // Mutating webhooks see the object as the client sent it, before the server fills in its system fields.
    const admit = this.admissionFor(k, undefined, 'CREATE', context);
    const attrs = (o: KubeObject): AdmissionAttributes | undefined =>
      admit && {
        ...admit,
        namespace,
        name: o.metadata.name ?? '',
        object: o,
        oldObject: undefined,
        dryRun,
      };
    const mutating = attrs(obj);
    if (mutating !== undefined) {
      obj = this.checkBody(k, (await this.admission?.mutate(mutating)) ?? obj);
      this.pruneFields(k, obj, undefined);
    }
    if (context !== undefined) this.guardWrite?.(k, obj, undefined, context.user);
    const meta = obj.metadata;
    if ((meta.name === undefined || meta.name === '') && meta.generateName !== undefined && meta.generateName !== '') {
      meta.name = meta.generateName.slice(0, MAX_GENERATED_NAME_PREFIX) + randomSafeString(NAME_SUFFIX_LENGTH);
    }
    meta.uid = randomUUID();
    meta.creationTimestamp = kubeTime();
    delete meta.deletionTimestamp;
    delete meta.resourceVersion;
    k.strategy?.prepareForCreate?.(obj);
    if (k === PODS) mountServiceAccountToken(obj, this.serviceAccountOf(obj));
    const causes = [...validateObjectMeta(k, obj), ...(k.strategy?.validate?.(obj) ?? [])];
    if (causes.length > 0) throw this.invalid(k, meta.name ?? '', causes);
    const name = meta.name ?? '';
    if (k.namespaced) this.checkNamespaceAcceptsContent(namespace ?? '');
    const validating = attrs(obj);
    if (validating !== undefined) await this.admission?.validate(validating);
    if (k === SERVICES) this.allocate(obj);
    if (dryRun) {
      if (k === SERVICES) this.releaseAllocations(obj);
      return obj;
    }
    try {
      return await this.storage.create(storageKey(k, namespace, name), obj);
    } catch (e) {
      if (k === SERVICES) this.releaseAllocations(obj);
      throw this.renamed(k, name, e);
    } finally {
      this.log.debug({ resource: qualifiedResource(k), namespace, name }, 'create');
    }
  }

  /** Update of the main resource or of a subresource (`status`), with `body` as the whole new object. */
  async update(
    k: KindInfo,
    namespace: string | undefined,
    name: string,
    body: KubeObject,
    opts: WriteOptions = {},
  ): Promise<KubeObject> {
    const obj = this.checkBody(k, body);
    if (opts.subresource === undefined)
      this.pruneFields(k, obj, opts.context, (unknown) =>
        this.strictDecodingError(opts.context?.requestKind ?? k, unknown),
      );
    if (obj.metadata.name !== undefined && obj.metadata.name !== name) {
      throw new ApiError(
        'BadRequest',
        `the name of the object (${obj.metadata.name}) does not match the name on the URL (${name})`,
      );
    }
    const key = storageKey(k, namespace, name);
    const rv = obj.metadata.resourceVersion;
    if ((rv === undefined || rv === '') && !allowsUnconditionalUpdate(k)) {
      throw this.invalid(k, name, [
        {
          reason: 'FieldValueInvalid',
          field: 'metadata.resourceVersion',
          message: 'Invalid value: 0x0: must be specified for an update',
        },
      ]);
    }
    if (this.storage.get(key) === undefined) throw this.notFound(k, name);
    return this.writeUpdate(
      k,
      namespace,
      name,
      (current) => {
        if (rv !== undefined && rv !== '' && rv !== current.metadata.resourceVersion) throw this.conflict(k, name);
        return clone(obj);
      },
      opts,
    );
  }

  async patch(
    k: KindInfo,
    namespace: string | undefined,
    name: string,
    type: PatchType,
    patch: unknown,
    opts: WriteOptions = {},
  ): Promise<KubeObject> {
    if (type === 'strategic' && !supportsStrategicMergePatch(k)) {
      throw new ApiError(
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: ${PATCH_TYPES.json}, ${PATCH_TYPES.merge}, application/apply-patch+yaml`,
      );
    }
    if (this.storage.get(storageKey(k, namespace, name)) === undefined) throw this.notFound(k, name);
    return this.writeUpdate(
      k,
      namespace,
      name,
      (current) => {
        const patched = applyPatch(type, current, patch, k);
        const obj = this.checkBody(k, patched);
        if (opts.subresource === undefined)
          this.pruneFields(k, obj, opts.context, (unknown) => strictPatchError(patched, unknown));
        const rv = obj.metadata.resourceVersion;
        if (rv !== undefined && rv !== '' && rv !== current.metadata.resourceVersion) throw this.conflict(k, name);
        return obj;
      },
      opts,
    );
  }

  /** GET of `<object>/scale`: the autoscaling/v1 Scale of a Deployment, ReplicaSet or StatefulSet. */
  getScale(k: KindInfo, namespace: string | undefined, name: string): KubeObject {
    return scaleOf(this.get(k, namespace, name));
  }

  /** PUT of `<object>/scale`: `body` is the whole new Scale. */
  updateScale(
    k: KindInfo,
    namespace: string | undefined,
    name: string,
    body: KubeObject,
    dryRun: boolean,
  ): Promise<KubeObject> {
    if (body.metadata?.name !== undefined && body.metadata.name !== name)
      throw new ApiError(
        'BadRequest',
        `the name of the object (${body.metadata.name}) does not match the name on the URL (${name})`,
      );
    return this.writeScale(k, namespace, name, () => body, dryRun);
  }

  /** PATCH of `<object>/scale`: the patch applies to the current Scale. */
  patchScale(
    k: KindInfo,
    namespace: string | undefined,
    name: string,
    type: PatchType,
    patch: unknown,
    dryRun: boolean,
  ): Promise<KubeObject> {
    return this.writeScale(k, namespace, name, (scale) => applyPatch(type, scale, patch, SCALE_KIND), dryRun);
  }

  /**
   * Writes the replicas of the Scale `next` makes of the current one into the object, as an update of the object
   * (its strategy counts the generation); the answer is the Scale of what was written. Admission webhooks do not
   * see scale writes.
   */
  private async writeScale(
    k: KindInfo,
    namespace: string | undefined,
    name: string,
    next: (scale: KubeObject) => KubeObject,
    dryRun: boolean,
  ): Promise<KubeObject> {
    if (this.storage.get(storageKey(k, namespace, name)) === undefined) throw this.notFound(k, name);
    const written = await this.writeUpdate(
      k,
      namespace,
      name,
      (current) => applyScale(k, current, next(scaleOf(current)), () => this.conflict(k, name)),
      { dryRun },
    );
    return scaleOf(written);
  }

  /** Applies `change` to the current object and writes it as an update (of `subresource`, if given). */
  async mutate(
    k: KindInfo,
    namespace: string | undefined,
    name: string,
    change: (o: KubeObject) => void,
    subresource?: string,
  ): Promise<KubeObject> {
    return this.writeUpdate(
      k,
      namespace,
      name,
      (current) => {
        const o = clone(current);
        change(o);
        return o;
      },
      { subresource },
    );
  }

  /**
   * pods/binding (k8s.io/kubernetes `pkg/registry/core/pod/storage` BindingREST): assigns a pod to a node, the one
   * way `spec.nodeName` changes after create. A pod already assigned, or being deleted, is a 409 Conflict.
   */
  async bindPod(namespace: string, name: string, binding: KubeObject): Promise<void> {
    const target = (binding as { target?: { kind?: unknown; name?: unknown } }).target ?? {};
    if (binding.metadata.name !== name)
      throw new ApiError('BadRequest', 'name in URL does not match name in Binding object');
    const causes: StatusCause[] = [];
    if (target.kind !== undefined && target.kind !== '' && target.kind !== 'Node')
      causes.push({
        reason: 'FieldValueNotSupported',
        field: 'target.kind',
        message: `Unsupported value: ${JSON.stringify(target.kind)}: must be empty or Node`,
      });
    if (typeof target.name !== 'string' || target.name === '')
      causes.push({ reason: 'FieldValueRequired', field: 'target.name', message: 'Required value' });
    if (causes.length > 0) throw invalid('Binding', '', name, causes);
    const node = target.name as string;
    await this.mutate(
      PODS,
      namespace,
      name,
      (pod) => {
        const spec = (pod.spec ??= {}) as { nodeName?: string };
        if (pod.metadata.deletionTimestamp !== undefined)
          throw new ApiError('Conflict', `pod ${name} is being deleted, cannot be assigned to a host`, {
            name,
            kind: 'pods',
          });
        if (spec.nodeName !== undefined && spec.nodeName !== '')
          throw new ApiError('Conflict', `pod ${name} is already assigned to node "${spec.nodeName}"`, {
            name,
            kind: 'pods',
          });
        spec.nodeName = node;
        const status = (pod.status ??= {}) as { conditions?: Record<string, unknown>[] };
        status.conditions = [
          ...(status.conditions ?? []).filter((c) => c.type !== 'PodScheduled'),
          { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: kubeTime() },
        ];
        if (binding.metadata.annotations !== undefined)
          pod.metadata.annotations = { ...pod.metadata.annotations, ...binding.metadata.annotations };
      },
      'binding',
    );
  }

  /**
   * Read-modify-write of one object: `next` builds the new object from the current one (and may throw a
   * precondition failure); system fields are kept, the strategy and validation run, and a concurrent write
   * retries the whole step, as GuaranteedUpdate does. A dry run does all of that and writes nothing.
   */
  private async writeUpdate(
    k: KindInfo,
    namespace: string | undefined,
    name: string,
    next: (current: KubeObject) => KubeObject,
    opts: WriteOptions,
  ): Promise<KubeObject> {
    const key = storageKey(k, namespace, name);
    const admit = this.admissionFor(k, opts.subresource, 'UPDATE', opts.context);
    if (admit !== undefined) return this.admittedUpdate(k, namespace, name, next, opts, admit);
    if (opts.dryRun === true) {
      const current = this.storage.get(key);
      if (current === undefined) throw this.notFound(k, name);
      return this.nextVersion(k, name, current, next, opts).obj;
    }
    // An update that lifts the last finalizer of an object being deleted deletes it instead, in one commit from
    // the version it read (the generic store's deleteWithoutFinalizers), so watchers see only DELETED.
    for (let attempt = 1; ; attempt++) {
      const removal: { current?: KubeObject } = {};
      const result = await this.storage
        .guaranteedUpdate(key, (current) => {
          const step = this.nextVersion(k, name, current, next, opts);
          if (step.removed) {
            removal.current = current;
            throw new RemoveInstead();
          }
          return step.obj;
        })
        .catch((e: unknown) => {
          if (e instanceof RemoveInstead) return undefined;
          throw this.renamed(k, name, e);
        });
      const current = removal.current;
      if (result !== undefined || current === undefined) return result as KubeObject;
      try {
        const deleted = await this.storage.delete(key, {
          uid: current.metadata.uid,
          resourceVersion: current.metadata.resourceVersion,
        });
        if (k === SERVICES) this.releaseAllocations(deleted);
        return deleted;
      } catch (e) {
        if (e instanceof ApiError && e.reason === 'Conflict' && attempt < DELETE_ATTEMPTS) continue;
        throw this.renamed(k, name, e);
      }
    }
  }

  /**
   * An update that admission webhooks see: the mutating webhooks get the object the request makes of the current
   * one, the validating webhooks the object to be written. The calls are asynchronous, so the write is conditional
   * on the version they saw, and a concurrent change runs the whole step again.
   */
  private async admittedUpdate(
    k: KindInfo,
    namespace: string | undefined,
    name: string,
    next: (current: KubeObject) => KubeObject,
    opts: WriteOptions,
    admit: AdmissionRequest,
  ): Promise<KubeObject> {
    const key = storageKey(k, namespace, name);
    const admission = this.admission as WebhookAdmission;
    for (let attempt = 1; ; attempt++) {
      const current = this.storage.get(key);
      if (current === undefined) throw this.notFound(k, name);
      const base = { ...admit, namespace, name, oldObject: current, dryRun: opts.dryRun === true };
      const proposed = next(current);
      const mutated = this.checkBody(k, (await admission.mutate({ ...base, object: proposed })) ?? proposed);
      if (opts.subresource === undefined) this.pruneFields(k, mutated, undefined);
      const step = this.nextVersion(k, name, current, () => mutated, opts);
      if (!step.removed) await admission.validate({ ...base, object: step.obj });
      if (opts.dryRun === true) return step.obj;
      const rv = current.metadata.resourceVersion;
      try {
        if (!step.removed) return await this.storage.update(key, step.obj, rv);
        const deleted = await this.storage.delete(key, { uid: current.metadata.uid, resourceVersion: rv });
        if (k === SERVICES) this.releaseAllocations(deleted);
        return deleted;
      } catch (e) {
        if (e instanceof ApiError && e.reason === 'Conflict' && attempt < ADMITTED_UPDATE_ATTEMPTS) continue;
        throw this.renamed(k, name, e);
      }
    }
  }

  /** What admission needs to know of a client's write of `k`, when some webhook may want to see it. */
  private admissionFor(
    k: KindInfo,
    subresource: string | undefined,
    operation: AdmissionOperation,
    context: AdmissionContext | undefined,
  ): AdmissionRequest | undefined {
    // Webhooks see the write at the version the client made it (`context.requestKind`), not the storage version.
    const requested = context?.requestKind ?? k;
    if (context === undefined || this.admission?.interested(requested, subresource, operation) !== true)
      return undefined;
    return { kind: requested, subresource, operation, context };
  }

  /** The object an update of `current` writes, and whether that update completes a pending deletion. */
  private nextVersion(
    k: KindInfo,
    name: string,
    current: KubeObject,
    next: (current: KubeObject) => KubeObject,
    opts: WriteOptions,
  ): { obj: KubeObject; removed: boolean } {
    const subresource = opts.subresource;
    const obj = next(current);
    const meta = obj.metadata;
    const old = current.metadata;
    meta.uid ??= old.uid;
    meta.creationTimestamp ??= old.creationTimestamp;
    meta.namespace ??= old.namespace;
    meta.name ??= old.name;
    if (old.deletionTimestamp !== undefined) meta.deletionTimestamp = old.deletionTimestamp;
    else delete meta.deletionTimestamp;
    if (old.deletionGracePeriodSeconds !== undefined) meta.deletionGracePeriodSeconds = old.deletionGracePeriodSeconds;
    else delete meta.deletionGracePeriodSeconds;
    if (meta.generation === undefined && old.generation !== undefined) meta.generation = old.generation;
    // An unconditional update writes over whatever is current (store.go sets the existing version).
    if (meta.resourceVersion === undefined || meta.resourceVersion === '') meta.resourceVersion = old.resourceVersion;
    if (subresource === 'status') {
      const merged = clone(current);
      if ('status' in obj) merged.status = obj.status;
      else delete merged.status;
      // pods/status may also change labels and annotations (the pod status strategy keeps only spec and
      // owner references); Istio's node agent annotates pods this way (cni/pkg/util/podutil.go).
      if (k === PODS) {
        if (meta.labels !== undefined) merged.metadata.labels = meta.labels;
        else delete merged.metadata.labels;
        if (meta.annotations !== undefined) merged.metadata.annotations = meta.annotations;
        else delete merged.metadata.annotations;
      }
      return { obj: merged, removed: false };
    }
    // pods/binding sets only what `bindPod` changed: the node, the PodScheduled condition, annotations.
    if (subresource === 'binding' && k === PODS) return { obj, removed: false };
    if (subresource === 'finalize' && k === NAMESPACES) {
      const merged = clone(current);
      merged.spec = {
        ...(merged.spec as object | undefined),
        finalizers: (obj.spec as { finalizers?: unknown } | undefined)?.finalizers ?? [],
      };
      return {
        obj: merged,
        removed:
          merged.metadata.deletionTimestamp !== undefined &&
          namespaceFinalizers(merged).length === 0 &&
          (merged.metadata.finalizers ?? []).length === 0,
      };
    }
    if (subresource !== undefined)
      throw new ApiError(
        'NotFound',
        `the server could not find the requested resource (${qualifiedResource(k)}/${subresource})`,
      );
    if (k.subresources.includes('status')) {
      if ('status' in current) obj.status = clone(current.status);
      else delete obj.status;
    }
    if (opts.context !== undefined) this.guardWrite?.(k, obj, current, opts.context.user);
    k.strategy?.prepareForUpdate?.(obj, current);
    const causes = [
      ...validateObjectMetaUpdate(k, obj, current),
      ...(k.strategy?.validateUpdate?.(obj, current) ?? []),
    ];
    if (causes.length > 0) throw this.invalid(k, name, causes);
    if (k === SERVICES && opts.dryRun !== true) {
      this.clusterIps.update(obj, current);
      this.nodePorts.update(obj, current);
    }
    // A delete waiting on finalizers completes when an update clears the last one, unless a grace period is
    // still running (store.go `ShouldDeleteDuringUpdate`).
    return {
      obj,
      removed:
        meta.deletionTimestamp !== undefined &&
        (meta.deletionGracePeriodSeconds ?? 0) === 0 &&
        (meta.finalizers ?? []).length === 0 &&
        (k !== NAMESPACES || namespaceFinalizers(obj).length === 0),
    };
  }

  /**
   * Deletes one object. One with finalizers gets a deletionTimestamp and stays until they are cleared; a
   * Namespace is emptied first (its `kubernetes` finalizer is the namespace controller's).
   */
  async delete(
    k: KindInfo,
    namespace: string | undefined,
    name: string,
    opts: DeleteOptions = {},
  ): Promise<KubeObject> {
    if (k === NAMESPACES && IMMORTAL_NAMESPACES.has(name)) {
      throw new ApiError('Forbidden', `namespaces "${name}" is forbidden: this namespace may not be deleted`, {
        name,
        kind: 'namespaces',
      });
    }
    const key = storageKey(k, namespace, name);
    const admit = this.admissionFor(k, undefined, 'DELETE', opts.context);
    const old = admit === undefined ? undefined : this.storage.get(key);
    if (admit !== undefined && old !== undefined)
      await this.admission?.validate({
        ...admit,
        namespace,
        name,
        object: undefined,
        oldObject: old,
        dryRun: opts.dryRun === true,
      });
    // The checks below hold for the version they read: the write is conditional on it, and a concurrent change
    // (a finalizer added, say) makes the whole decision again, as the store's conditional delete does.
    for (let attempt = 1; ; attempt++) {
      const current = this.storage.get(key);
      if (current === undefined) throw this.notFound(k, name);
      const pre = opts.preconditions;
      if (pre?.uid !== undefined && pre.uid !== current.metadata.uid) {
        throw new ApiError(
          'Conflict',
          `Operation cannot be fulfilled on ${qualifiedResource(k)} "${name}": Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${current.metadata.uid ?? ''}`,
          { name, group: k.group, kind: k.plural },
        );
      }
      if (pre?.resourceVersion !== undefined && pre.resourceVersion !== current.metadata.resourceVersion) {
        throw new ApiError(
          'Conflict',
          `Operation cannot be fulfilled on ${qualifiedResource(k)} "${name}": Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in meta: ${current.metadata.resourceVersion ?? ''}`,
          { name, group: k.group, kind: k.plural },
        );
      }
      if (opts.dryRun === true) return current;
      const rv = current.metadata.resourceVersion;
      const policy = opts.propagationPolicy ?? k.strategy?.defaultPropagationPolicy;
      const graceful = beforeDelete(k.strategy, current, opts.gracePeriodSeconds);
      try {
        if (graceful.kind === 'pending') return current;
        // A pod bound to a node stays, marked, until its kubelet has stopped it and deletes it with grace 0.
        if (graceful.kind === 'graceful') {
          const marked = graceful.obj;
          if (policy === 'Foreground' && !(marked.metadata.finalizers ?? []).includes(FOREGROUND_DELETION))
            marked.metadata.finalizers = [...(marked.metadata.finalizers ?? []), FOREGROUND_DELETION];
          if (graceful.period > 0 || (marked.metadata.finalizers ?? []).length > 0)
            return await this.storage.update(key, marked, rv);
        }
        // Foreground: the object stays, marked and held by the foregroundDeletion finalizer, until the garbage
        // collector has deleted its dependents (those with blockOwnerDeletion first), then lifts the finalizer.
        if (
          policy === 'Foreground' &&
          graceful.kind === 'none' &&
          k !== NAMESPACES &&
          current.metadata.deletionTimestamp === undefined
        ) {
          const marked = clone(current);
          marked.metadata.deletionTimestamp = kubeTime();
          marked.metadata.finalizers = [
            ...(marked.metadata.finalizers ?? []).filter((f) => f !== FOREGROUND_DELETION),
            FOREGROUND_DELETION,
          ];
          return await this.storage.update(key, marked, rv);
        }
        // A Namespace is always emptied first: the namespace controller removes it once nothing is left in it.
        if (graceful.kind === 'none' && ((current.metadata.finalizers ?? []).length > 0 || k === NAMESPACES)) {
          if (current.metadata.deletionTimestamp !== undefined) return current;
          const marked = clone(current);
          marked.metadata.deletionTimestamp = kubeTime();
          if (k === NAMESPACES) marked.status = { ...(marked.status as object | undefined), phase: 'Terminating' };
          return await this.storage.update(key, marked, rv);
        }
        if (policy === 'Orphan' && current.metadata.uid !== undefined)
          await this.orphanDependents?.(current.metadata.uid);
        const deleted = await this.storage.delete(key, { uid: current.metadata.uid, resourceVersion: rv });
        if (k === SERVICES) this.releaseAllocations(deleted);
        return deleted;
      } catch (e) {
        if (e instanceof ApiError && e.reason === 'Conflict' && attempt < DELETE_ATTEMPTS) continue;
        throw this.renamed(k, name, e);
      }
    }
  }

  async deleteCollection(
    k: KindInfo,
    namespace: string | undefined,
    listOpts: ListOptions,
    opts: DeleteOptions,
  ): Promise<KubeList> {
    const list = this.list(k, namespace, listOpts);
    const deleted: KubeObject[] = [];
    for (const o of list.items) {
      try {
        deleted.push(await this.delete(k, o.metadata.namespace, o.metadata.name ?? '', opts));
      } catch (e) {
        if (!(e instanceof ApiError && e.reason === 'NotFound')) throw e;
      }
    }
    return { ...list, items: deleted };
  }

  /**
   * Watches `k` (in `namespace`, or everywhere) from `fromRevision`: events after it, filtered as the watch cache
   * filters them (an object that stops matching arrives as DELETED, one that starts matching as ADDED).
   * Throws 410 Expired when `fromRevision` is older than the retained history.
   */
  watch(
    k: KindInfo,
    namespace: string | undefined,
    fromRevision: number,
    opts: ListOptions,
    send: (e: ResourceEvent) => void,
    onError: (e: unknown) => void,
  ): () => void {
    const match = this.matcher(k, opts);
    return this.storage.watch(
      storagePrefix(k, namespace),
      fromRevision,
      (e: StorageEvent) => {
        if (match === undefined) {
          send({ type: e.type, object: e.object });
          return;
        }
        const now = e.type !== 'DELETED' && match(e.object);
        const before = e.prevObject !== undefined && match(e.prevObject);
        if (e.type === 'DELETED') {
          if (match(e.object)) send({ type: 'DELETED', object: e.object });
        } else if (now && before) send({ type: 'MODIFIED', object: e.object });
        else if (now) send({ type: 'ADDED', object: e.object });
        else if (before) send({ type: 'DELETED', object: e.object });
      },
      onError,
    );
  }

  private matcher(k: KindInfo, opts: ListOptions): Matcher | undefined {
    const labels =
      opts.labelSelector !== undefined && opts.labelSelector !== ''
        ? parseLabelSelector(opts.labelSelector)
        : undefined;
    const fields =
      opts.fieldSelector !== undefined && opts.fieldSelector !== ''
        ? parseFieldSelector(opts.fieldSelector, k)
        : undefined;
    if (labels === undefined && fields === undefined) return undefined;
    return (o) =>
      (labels === undefined || labels.matches(o.metadata.labels ?? {})) && (fields === undefined || fields.matches(o));
  }

  /** The body must be an object of this kind; apiVersion and kind may be left out, as the API allows. */
  private checkBody(k: KindInfo, body: KubeObject): KubeObject {
    if (!isRecord(body)) throw new ApiError('BadRequest', `the body of the request is not a ${k.kind} object`);
    const obj = clone(body);
    const apiVersion = apiVersionOf(k);
    if (
      (obj.apiVersion !== undefined && obj.apiVersion !== apiVersion) ||
      (obj.kind !== undefined && obj.kind !== k.kind)
    ) {
      throw new ApiError(
        'BadRequest',
        `the API version in the data (${obj.apiVersion}) does not match the expected API version (${apiVersion})`,
      );
    }
    obj.apiVersion = apiVersion;
    obj.kind = k.kind;
    if (!isRecord(obj.metadata)) obj.metadata = {};
    const undecodable = decodeError(k, obj);
    if (undecodable !== undefined) throw undecodable;
    return obj;
  }

  /**
   * Structural pruning of a decoded body (kinds with a schema): unknown fields are dropped, and reported as the
   * request's fieldValidation asks: a warning each (Warn), or `strict` builds the error that refuses it (Strict).
   */
  private pruneFields(
    k: KindInfo,
    obj: KubeObject,
    context: AdmissionContext | undefined,
    strict?: (unknown: string[]) => ApiError,
  ): void {
    const pruned = k.strategy?.prune?.(obj) ?? [];
    if (pruned.length === 0 || context === undefined || context.fieldValidation === 'Ignore') return;
    const unknown = pruned.map((p) => `unknown field "${p}"`);
    if (context.fieldValidation === 'Strict' && strict !== undefined) throw strict(unknown);
    for (const w of unknown) if (!context.warnings.includes(w)) context.warnings.push(w);
  }

  /** A create or update body with unknown fields under fieldValidation=Strict (handlers' transformDecodeError). */
  private strictDecodingError(k: KindInfo, unknown: string[]): ApiError {
    return new ApiError(
      'BadRequest',
      `${k.kind} in version "${k.version}" cannot be handled as a ${k.kind}: strict decoding error: ${unknown.join(', ')}`,
    );
  }

  private checkNamespaceAcceptsContent(namespace: string): void {
    const ns = this.storage.get(storageKey(NAMESPACES, undefined, namespace));
    if (ns === undefined)
      throw new ApiError('NotFound', `namespaces "${namespace}" not found`, { name: namespace, kind: 'namespaces' });
    if (ns.metadata.deletionTimestamp !== undefined) {
      throw new ApiError(
        'Forbidden',
        `unable to create new content in namespace ${namespace} because it is being terminated`,
        {
          name: namespace,
          kind: 'namespaces',
          causes: [
            {
              reason: 'NamespaceTerminating',
              message: `namespace ${namespace} is being terminated`,
              field: 'metadata.namespace',
            },
          ],
        },
      );
    }
  }

  private notFound(k: KindInfo, name: string): ApiError {
    return new ApiError('NotFound', `${qualifiedResource(k)} "${name}" not found`, {
      name,
      group: k.group,
      kind: k.plural,
    });
  }

  private conflict(k: KindInfo, name: string): ApiError {
    return new ApiError(
      'Conflict',
      `Operation cannot be fulfilled on ${qualifiedResource(k)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      { name, group: k.group, kind: k.plural },
    );
  }

  private invalid(k: KindInfo, name: string, causes: StatusCause[]): ApiError {
    return invalid(k.kind, k.group, name, causes);
  }

  /** The store's errors name keys; the API names the resource. */
  private renamed(k: KindInfo, name: string, e: unknown): unknown {
    if (!(e instanceof ApiError)) return e;
    if (e.reason === 'NotFound') return this.notFound(k, name);
    if (e.reason === 'AlreadyExists')
      return new ApiError('AlreadyExists', `${qualifiedResource(k)} "${name}" already exists`, {
        name,
        group: k.group,
        kind: k.plural,
      });
    if (e.reason === 'Conflict' && e.details?.name === undefined) return this.conflict(k, name);
    return e;
  }
}

/**
 * Built-in kinds accept an update without resourceVersion (their strategies' AllowUnconditionalUpdate);
 * custom resources (Istio's, Gateway API's) do not.
 */
function allowsUnconditionalUpdate(k: KindInfo): boolean {
  return !k.group.includes('.') || (k.group.endsWith('.k8s.io') && k.group !== 'gateway.networking.k8s.io');
}

/**
 * A patch whose result has unknown fields under fieldValidation=Strict: k8s.io/apiserver handlers/patch.go refuses
 * it as an Invalid `patch` field holding the patched object's JSON (map keys sorted, as Go writes them).
 */
function strictPatchError(patched: KubeObject, unknown: string[]): ApiError {
  return invalid('', '', '', [
    {
      reason: 'FieldValueInvalid',
      field: 'patch',
      message: `Invalid value: ${JSON.stringify(JSON.stringify(sortedKeys(patched)))}: strict decoding error: ${unknown.join(', ')}`,
    },
  ]);
}

function sortedKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortedKeys);
  if (!isRecord(v)) return v;
  return Object.fromEntries(
    Object.keys(v)
      .sort()
      .map((key) => [key, sortedKeys(v[key])]),
  );
}

/** A Namespace's `spec.finalizers`: `kubernetes` until the namespace controller has emptied it. */
function namespaceFinalizers(ns: KubeObject): unknown[] {
  const f = (ns.spec as { finalizers?: unknown } | undefined)?.finalizers;
  return Array.isArray(f) ? f : [];
}
