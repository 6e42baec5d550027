/**
 * `amesh install`'s work on a cluster, as istioctl's Installer (istio operator/pkg/install/install.go): create the
 * Istio namespace, then apply each component's objects with the owner labels and wait for them to be ready, base
 * first, istiod and the node agent after it, the ingress gateways after istiod, ztunnel after the node agent
 * (components not installed count as done), then, with istiod, deploy the default revision's validator as istioctl
 * does (default-revision-validator.ts), and prune the objects of earlier installs (found by their owner labels)
 * that are no longer rendered.
 *
 * Each object is read first: a missing one is created, a live one whose fields already match the rendering is left
 * alone (its resourceVersion does not move), and one that differs is replaced, keeping what others own
 * (live-object.ts). With `dryRun` nothing is written and nothing waited for: the plan is reported instead.
 */
import { isMeshError, MeshError } from '../lib/errors.js';
import type { RenderedObject } from './chart-helpers.js';
import { ApiRefusal, objectId, type ClusterClient } from './cluster-client.js';
import { COMPONENTS, type ComponentName } from './components.js';
import { istioNamespace, type GeneratedManifest, type ManifestSet } from './generate-manifest.js';
import { CLUSTER_KINDS, NAMESPACED_KINDS, NAMESPACE_KIND, installKind } from './install-kinds.js';
import { covers, desiredObject, replacementFor } from './live-object.js';
import { DEFAULT_VALIDATOR, defaultRevisionValidator } from './default-revision-validator.js';
import { compareManifests } from './manifest-yaml.js';
import {
  COMPONENT_LABEL,
  OWNING_RESOURCE_NOT_PRUNED,
  OPERATOR_VERSION,
  ownerLabels,
  selectorOf,
  withOwnerLabels,
} from './owner-labels.js';
import type { ProgressLog } from './progress-log.js';
import { waitForReady, type Clock } from './readiness.js';
import { getString, type Tree } from './value-tree.js';

/** Which components wait for which (operator/pkg/install/install.go componentDependencies). */
const DEPENDS_ON: Readonly<Record<ComponentName, readonly ComponentName[]>> = {
  Base: [],
  Pilot: ['Base'],
  IngressGateways: ['Pilot'],
  Cni: ['Base'],
  Ztunnel: ['Cni'],
};
const COMPONENT_NAMES: readonly string[] = COMPONENTS.map((c) => c.name);

/** A replaced object that changed underneath is read again and retried this often. */
const CONFLICT_ATTEMPTS = 3;

export type Action = 'created' | 'updated' | 'unchanged' | 'pruned';

export interface InstallOptions {
  readonly client: ClusterClient;
  readonly manifest: GeneratedManifest;
  readonly progress: ProgressLog;
  readonly readinessTimeoutMs: number;
  readonly dryRun?: boolean;
  readonly clock?: Clock;
  /** Each object's fate, as it is decided. */
  readonly onAction?: (action: Action, id: string) => void;
}

export class Installer {
  private readonly dryRun: boolean;

  constructor(private readonly o: InstallOptions) {
    this.dryRun = o.dryRun === true;
  }

  async run(): Promise<void> {
    const { manifest, progress } = this.o;
    await this.createNamespace();
    const finished = new Map<ComponentName, Promise<void>>();
    const errors: string[] = [];
    const installed = new Set(manifest.sets.map((s) => s.component.name));
    const after = (c: ComponentName): Promise<void> =>
      installed.has(c) ? (finished.get(c) ?? Promise.resolve()) : Promise.resolve();
    for (const set of manifest.sets) {
      const deps = DEPENDS_ON[set.component.name].map(after);
      finished.set(
        set.component.name,
        Promise.all(deps)
          .then(() => this.applySet(set))
          .catch((e: unknown) => {
            errors.push(isMeshError(e) ? e.message : String(e));
          }),
      );
    }
    await Promise.all(finished.values());
    if (errors.length > 0) {
      progress.stop();
      const code = errors.every((e) => e.startsWith('resources not ready'))
        ? 'INSTALL_ERR_NOT_READY'
        : 'INSTALL_ERR_APPLY';
      throw new MeshError(code, `failed to install manifests: ${errors.join('\n')}`);
    }
    if (installed.has('Pilot')) await this.deployDefaultValidator();
    progress.pruning();
    await this.prune();
    progress.complete();
  }

  /** istioctl's default tag: the validator of objects without a revision label (default-revision-validator.ts). */
  private async deployDefaultValidator(): Promise<void> {
    const kind = installKind('admissionregistration.k8s.io/v1', 'ValidatingWebhookConfiguration');
    const live = await this.o.client.get(kind, undefined, DEFAULT_VALIDATOR);
    const o = defaultRevisionValidator(this.o.manifest.iop, live?.metadata.labels?.['istio.io/tag'] === 'default');
    if (o !== undefined) await this.applyObject(o);
  }

  private async createNamespace(): Promise<void> {
    const { client, manifest } = this.o;
    const name = istioNamespace(manifest.iop);
    if ((await client.get(NAMESPACE_KIND, undefined, name)) !== undefined) return;
    this.o.onAction?.('created', `Namespace/${name}`);
    if (this.dryRun) return;
    const network = getString(manifest.iop, ['spec', 'values', 'global', 'network']);
    await client.create({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, labels: network === '' ? {} : { 'topology.istio.io/network': network } },
    });
  }

  private async applySet(set: ManifestSet): Promise<void> {
    const plog = this.o.progress.start(set.component);
    try {
      const ordered = [...set.objects].sort(compareManifests);
      for (const o of ordered) await this.applyObject(withOwnerLabels(o, this.o.manifest.iop, set.component.name));
      if (!this.dryRun)
        await waitForReady(this.o.client, set.objects, {
          timeoutMs: this.o.readinessTimeoutMs,
          clock: this.o.clock,
          onWaiting: (ids) => plog.waiting(ids),
        });
      plog.finished();
    } catch (e) {
      plog.failed(isMeshError(e) ? e.message : String(e));
      throw e;
    }
  }

  private async applyObject(o: RenderedObject): Promise<void> {
    const { client } = this.o;
    const kind = installKind(o.apiVersion, o.kind);
    const id = objectId(o);
    for (let attempt = 1; ; attempt++) {
      const live = await client.get(kind, o.metadata.namespace, o.metadata.name);
      try {
        if (live === undefined) {
          this.o.onAction?.('created', id);
          if (!this.dryRun) await client.create(o);
          return;
        }
        const desired = desiredObject(o, live);
        if (covers(desired, live)) {
          this.o.onAction?.('unchanged', id);
          return;
        }
        this.o.onAction?.('updated', id);
        if (!this.dryRun) await client.replace(replacementFor(desired, live));
        return;
      } catch (e) {
        if (!(e instanceof ApiRefusal)) throw e;
        const conflict = e.status.reason === 'Conflict' || e.status.reason === 'AlreadyExists';
        if (!conflict || attempt >= CONFLICT_ATTEMPTS)
          throw client.refused(live === undefined ? 'create' : 'update', id, e.status);
      }
    }
  }

  /** Removes objects of this install's owner that no component renders any more. */
  private async prune(): Promise<void> {
    if (this.dryRun) return;
    const { client, manifest } = this.o;
    const rendered = new Map<string, Set<string>>();
    for (const set of manifest.sets)
      rendered.set(
        set.component.name,
        new Set(set.objects.map((o) => `${o.kind}:${o.metadata.namespace ?? ''}:${o.metadata.name}`)),
      );
    const owner = Object.entries(ownerLabels(manifest.iop)).filter(([k]) => k !== OPERATOR_VERSION);
    const selector = `${selectorOf(Object.fromEntries(owner))},${COMPONENT_LABEL}`;
    for (const kind of [...NAMESPACED_KINDS, ...CLUSTER_KINDS]) {
      for (const live of await client.list(kind, selector)) {
        const component = live.metadata.labels?.[COMPONENT_LABEL] ?? '';
        if (!COMPONENT_NAMES.includes(component)) continue;
        if (live.metadata.labels?.[OWNING_RESOURCE_NOT_PRUNED] === 'true') continue;
        if (rendered.get(component)?.has(`${live.kind}:${live.metadata.namespace ?? ''}:${live.metadata.name}`))
          continue;
        if (await client.delete(kind, live.metadata.namespace, live.metadata.name))
          this.o.onAction?.('pruned', objectId(live));
      }
    }
  }
}

/** The IstioOperator's profile name, as istioctl names it in its prompt. */
export function profileName(iop: Readonly<Tree>): string {
  return getString(iop, ['spec', 'profile'], 'default');
}
