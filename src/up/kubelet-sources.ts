/**
 * What a kubelet of `amesh up` reads besides its pods, from one set of informers: the Services (the containers'
 * Service variables and the cluster DNS address), and the ConfigMaps and Secrets that pods use as volumes and env. A change to a ConfigMap or Secret is passed on, so that the pods using it rewrite their
 * volumes at once, as kubelet's Watch change-detection strategy (its default) makes it do.
 */
import type { KubeConfig, V1ConfigMap, V1Secret, V1Service } from '@kubernetes/client-node';
import { RestartingInformer } from '../kube/informer.js';
import { listJson } from '../kube/list-json.js';
import type { Logger } from '../lib/log.js';

export type SourceKind = 'ConfigMap' | 'Secret';
export type SourceListener = (kind: SourceKind, namespace: string, name: string) => void;

export class KubeletSources {
  readonly services: RestartingInformer<V1Service>;
  private readonly configMaps: RestartingInformer<V1ConfigMap>;
  private readonly secrets: RestartingInformer<V1Secret>;
  private readonly listeners = new Set<SourceListener>();
  readonly synced: Promise<void>;

  constructor(kc: KubeConfig, log: Logger) {
    const informer = <T extends V1ConfigMap | V1Secret | V1Service>(
      path: string,
      kind: SourceKind | undefined,
    ): RestartingInformer<T> => {
      const changed = (o: T): void => {
        if (kind === undefined) return;
        for (const l of this.listeners) l(kind, o.metadata?.namespace ?? '', o.metadata?.name ?? '');
      };
      return new RestartingInformer<T>(
        kc,
        path,
        () => listJson(kc, path),
        { add: changed, update: changed, delete: changed },
        log,
      );
    };
    this.services = informer('/api/v1/services', undefined);
    this.configMaps = informer('/api/v1/configmaps', 'ConfigMap');
    this.secrets = informer('/api/v1/secrets', 'Secret');
    this.synced = Promise.all([this.services.synced, this.configMaps.synced, this.secrets.synced]).then(
      () => undefined,
    );
  }

  start(): void {
    this.services.start();
    this.configMaps.start();
    this.secrets.start();
  }

  configMap(namespace: string, name: string): V1ConfigMap | undefined {
    return this.configMaps.get(name, namespace);
  }

  secret(namespace: string, name: string): V1Secret | undefined {
    return this.secrets.get(name, namespace);
  }

  /** Calls `l` on every change of a ConfigMap or Secret; the function returned stops that. */
  onChange(l: SourceListener): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  async stop(): Promise<void> {
    await Promise.all([this.services.stop(), this.configMaps.stop(), this.secrets.stop()]);
  }
}
