/**
 * What k8s.io/apiextensions-apiserver's controllers do for stored CustomResourceDefinitions (`pkg/controller/status`
 * naming controller, `pkg/controller/establish`, `pkg/controller/finalizer`), in one loop over the store:
 * - each CRD of a kind the server has not built in is served: its storage version (with its schema, scope, names and
 *   status subresource) joins the served kinds, so discovery, OpenAPI and `/apis/<group>/<version>/<plural>` show
 *   it, and its objects are pruned, defaulted and validated by its schema like the built-in custom kinds';
 * - a CRD naming a built-in custom kind (same group, plural and kind: Istio's, the Gateway API's) is served by it;
 * - every CRD gets the conditions NamesAccepted and Established and its `acceptedNames`, written through `status`,
 *   so `kubectl wait --for condition=established` returns; one whose group and plural a built-in kind of another
 *   name holds is not served (NamesAccepted False, `AlreadyServed`);
 * - a deleted CRD's objects are deleted.
 * Only the storage version of a CRD is served (there is no conversion between versions).
 */
import type { Logger } from '../lib/log.js';
import { kubeTime } from '../lib/kube-time.js';
import { ApiError } from './api-error.js';
import type { KindInfo, Subresource } from './kind-info.js';
import { KINDS, findKind, setDefinedKinds } from './kinds.js';
import type { KubeObject } from './kube-object.js';
import type { ResourceStore } from './resource-store.js';
import type { JsonSchema } from './schema/json-schema.js';
import { customResourceStrategyWith } from './strategies/custom-resource.js';
import { namesOf, specOf } from './strategies/custom-resource-definition.js';
import { asArray, asObject, asString } from './validation/json-fields.js';

const CRDS = findKind('apiextensions.k8s.io', 'v1', 'customresourcedefinitions') as KindInfo;

interface Condition {
  type: string;
  status: 'True' | 'False';
  reason: string;
  message: string;
}

/** The version a CRD is served at: its storage version if served, else its first served one. */
function servedVersion(crd: KubeObject): Record<string, unknown> | undefined {
  const versions = (asArray(specOf(crd).versions) ?? []).map(asObject).filter((v) => v?.served === true);
  return versions.find((v) => v?.storage === true) ?? versions[0];
}

/** The kind a CRD defines, as the server serves it. */
function definedKind(crd: KubeObject): KindInfo | undefined {
  const version = servedVersion(crd);
  const names = namesOf(crd);
  const schema = asObject(asObject(version?.schema)?.openAPIV3Schema) as JsonSchema | undefined;
  const kind = asString(names.kind);
  const plural = asString(names.plural);
  const name = asString(version?.name);
  if (version === undefined || kind === undefined || plural === undefined || name === undefined) return undefined;
  const strings = (v: unknown): string[] => (asArray(v) ?? []).filter((x): x is string => typeof x === 'string');
  const subresources: Subresource[] = asObject(asObject(version.subresources)?.status) !== undefined ? ['status'] : [];
  return Object.freeze({
    group: asString(specOf(crd).group) ?? '',
    version: name,
    kind,
    plural,
    singular: asString(names.singular) ?? kind.toLowerCase(),
    namespaced: specOf(crd).scope !== 'Cluster',
    shortNames: Object.freeze(strings(names.shortNames)),
    categories: Object.freeze(strings(names.categories)),
    subresources: Object.freeze(subresources),
    review: false,
    strategy: customResourceStrategyWith(() => schema),
    ...(schema !== undefined ? { schema } : {}),
  });
}

/** The built-in kind holding a CRD's group and plural, if any. */
function builtIn(crd: KubeObject): KindInfo | undefined {
  const group = asString(specOf(crd).group);
  const plural = asString(namesOf(crd).plural);
  return KINDS.find((k) => k.group === group && k.plural === plural);
}

function conditionsFor(crd: KubeObject): Condition[] {
  const held = builtIn(crd);
  if (held !== undefined && held.kind !== namesOf(crd).kind)
    return [
      {
        type: 'NamesAccepted',
        status: 'False',
        reason: 'AlreadyServed',
        message: `"${String(namesOf(crd).plural)}" is already served by the built-in kind ${held.kind}`,
      },
      { type: 'Established', status: 'False', reason: 'NotAccepted', message: 'not all names are accepted' },
    ];
  return [
    { type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', message: 'no conflicts found' },
    {
      type: 'Established',
      status: 'True',
      reason: 'InitialNamesAccepted',
      message: 'the initial names have been accepted',
    },
  ];
}

export class CustomResourceDefinitionController {
  private stopWatch: (() => void) | undefined;
  /** The kinds served from CRDs, by the CRD's uid (a CRD deleted and made again is another). */
  private defined = new Map<string, KindInfo>();
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: ResourceStore,
    private readonly log: Logger,
  ) {}

  /** Serves the stored CRDs' kinds now, then follows every change to the CRDs. */
  async start(): Promise<void> {
    const list = this.store.list(CRDS, undefined);
    await this.sync();
    this.stopWatch = this.store.watch(
      CRDS,
      undefined,
      Number(list.metadata.resourceVersion),
      {},
      () => this.enqueue(),
      (e) => this.log.error({ err: String(e) }, 'custom resource definitions watch failed'),
    );
  }

  /** Stops following the CRDs, and serves their kinds no more. */
  async stop(): Promise<void> {
    this.stopWatch?.();
    await this.queue;
    setDefinedKinds([]);
  }

  private enqueue(): void {
    this.queue = this.queue
      .then(() => this.sync())
      .catch((e: unknown) => {
        this.log.error({ err: String(e) }, 'custom resource definitions sync failed');
      });
  }

  private async sync(): Promise<void> {
    const crds = this.store.list(CRDS, undefined).items;
    const defined = new Map<string, KindInfo>();
    for (const crd of crds) {
      const k = builtIn(crd) === undefined ? definedKind(crd) : undefined;
      if (k !== undefined && crd.metadata.deletionTimestamp === undefined) defined.set(crd.metadata.uid ?? '', k);
    }
    const removed = [...this.defined].filter(([uid]) => !defined.has(uid)).map(([, k]) => k);
    // The objects of a CRD that is gone go too (upstream's finalizer deletes them before the CRD), before a CRD
    // made again in the meantime serves the kind anew.
    for (const k of removed) {
      await this.store.deleteCollection(k, undefined, {}, {});
      this.log.info({ resource: `${k.plural}.${k.group}` }, 'custom resource definition removed; its objects deleted');
    }
    this.defined = defined;
    setDefinedKinds([...defined.values()]);
    for (const crd of crds) await this.writeStatus(crd);
  }

  /** The conditions and accepted names of a CRD, written when they changed (transition times kept otherwise). */
  private async writeStatus(crd: KubeObject): Promise<void> {
    const status = asObject(crd.status) ?? {};
    const before = (asArray(status.conditions) ?? []).map(asObject);
    const wanted = conditionsFor(crd);
    const accepted = wanted[0]?.status === 'True' ? namesOf(crd) : (asObject(status.acceptedNames) ?? {});
    const same =
      JSON.stringify(status.acceptedNames) === JSON.stringify(accepted) &&
      wanted.every((c) => {
        const b = before.find((x) => x?.type === c.type);
        return b?.status === c.status && b.reason === c.reason && b.message === c.message;
      });
    if (same) return;
    const now = kubeTime();
    const conditions = wanted.map((c) => {
      const b = before.find((x) => x?.type === c.type);
      const kept = b?.status === c.status ? asString(b.lastTransitionTime) : undefined;
      return { ...c, lastTransitionTime: kept ?? now };
    });
    try {
      await this.store.mutate(
        CRDS,
        undefined,
        crd.metadata.name ?? '',
        (o) => {
          o.status = { ...asObject(o.status), conditions, acceptedNames: accepted };
        },
        'status',
      );
    } catch (e) {
      if (!(e instanceof ApiError && e.reason === 'NotFound')) throw e;
    }
  }
}
