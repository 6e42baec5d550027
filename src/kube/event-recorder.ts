/**
 * Events about an object, as client-go's `record.EventRecorder` writes them (k8s.io/client-go `tools/record`): a
 * core/v1 Event named `<object>.<suffix>` in the object's namespace, naming the object, a reason and a message,
 * from one component (and host, for node components), so `kubectl describe` and `kubectl get events` show them.
 * Repeats are not aggregated.
 */
import { CoreV1Api, type CoreV1Event, type KubeConfig, type V1ObjectMeta } from '@kubernetes/client-node';

export interface EventObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata?: V1ObjectMeta;
}

export class EventRecorder {
  private readonly core: CoreV1Api;

  constructor(
    kc: KubeConfig,
    private readonly component: string,
    private readonly host?: string,
  ) {
    this.core = kc.makeApiClient(CoreV1Api);
  }

  /** Writes one Event; throws what the API answered if it cannot. */
  async record(o: EventObject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const namespace = o.metadata?.namespace ?? 'default';
    const name = o.metadata?.name ?? '';
    const now = new Date();
    const body: CoreV1Event = {
      metadata: { generateName: `${name}.`, namespace },
      involvedObject: { apiVersion: o.apiVersion, kind: o.kind, namespace, name, uid: o.metadata?.uid },
      reason,
      message,
      type,
      source: { component: this.component, ...(this.host === undefined ? {} : { host: this.host }) },
      reportingComponent: this.component,
      reportingInstance: this.host ?? this.component,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    await this.core.createNamespacedEvent({ namespace, body });
  }
}
