/**
 * Keeps istiod's ValidatingWebhookConfigurations working, as istio `pkg/webhooks/validation/controller/controller.go`
 * does: every configuration labelled `istio.io/rev: <revision>` gets istiod's root certificate as each webhook's
 * `clientConfig.caBundle`, and once istiod has seen its own webhook refuse a known-bad object, `failurePolicy: Fail`
 * (the chart ships `Ignore`, so that nothing is blocked while istiod is not yet serving). The probe is a dry-run
 * create of a Gateway carrying the always-reject annotation: refused by a webhook means the path from the API server
 * to istiod works; the API not serving Gateways, or a webhook that cannot do dry runs, also counts as ready, as
 * upstream decides. Until then the caBundle is written, the policy left as it is, and the configuration retried
 * with backoff (100 ms doubling to a minute, as upstream's queue).
 */
import {
  AdmissionregistrationV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import { MeshError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { RestartingInformer } from '../../kube/informer.js';
import { describeKubeError } from '../../kube/kube-status.js';
import { ReconcileQueue } from '../../kube/reconcile-queue.js';
import type { SharedInformerFactory } from '../../kube/shared-informer-factory.js';
import { ALWAYS_REJECT_ANNOTATION } from './config-validation.js';

/** label.IoIstioRev. */
export const REVISION_LABEL = 'istio.io/rev';
/** The longest wait between tries of a configuration that is not ready to fail closed. */
const MAX_RETRY_DELAY_MS = 60_000;
const PATH = '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations';

/** What the probe's refusal says, by the cause upstream tells apart. */
const DENIED = 'denied the request';
const NOT_SERVED = 'the server could not find the requested resource';
const NO_DRY_RUN = 'does not support dry run';

export class ValidatingWebhookController {
  private readonly api: AdmissionregistrationV1Api;
  private readonly custom: CustomObjectsApi;
  private readonly queue: ReconcileQueue;
  private readonly webhooks: RestartingInformer<V1ValidatingWebhookConfiguration>;
  private readonly caBundle: string;
  /** Set once the probe was refused by a webhook: from then on every configuration fails closed. */
  private failCloseReady = false;

  constructor(
    kc: KubeConfig,
    informers: SharedInformerFactory,
    rootPem: string,
    private readonly revision: string,
    /** Where the probe Gateway is (not) created: istiod's own namespace. */
    private readonly namespace: string,
    private readonly log: Logger,
  ) {
    this.api = kc.makeApiClient(AdmissionregistrationV1Api);
    this.custom = kc.makeApiClient(CustomObjectsApi);
    this.caBundle = Buffer.from(rootPem).toString('base64');
    this.queue = new ReconcileQueue((name) => this.reconcile(name), Infinity, log, MAX_RETRY_DELAY_MS);
    this.webhooks = informers.informerFor<V1ValidatingWebhookConfiguration>(PATH);
    const enqueue = (o: V1ValidatingWebhookConfiguration): void => {
      if (o.metadata?.labels?.[REVISION_LABEL] === revision && o.metadata.name !== undefined)
        this.queue.add(o.metadata.name);
    };
    this.webhooks.addEventHandler({ add: enqueue, update: enqueue });
  }

  get synced(): Promise<void> {
    return this.webhooks.synced;
  }

  start(): void {
    void this.synced.then(() => this.queue.run());
  }

  stop(): void {
    this.queue.stop();
  }

  private async reconcile(name: string): Promise<void> {
    const current = this.webhooks.get(name);
    if (current === undefined || current.metadata?.labels?.[REVISION_LABEL] !== this.revision) return;
    const hooks = current.webhooks ?? [];
    const caChange = hooks.some((w) => w.clientConfig.caBundle !== this.caBundle);
    const failOpen = hooks.some((w) => w.failurePolicy !== undefined && w.failurePolicy !== 'Fail');
    if (!caChange && !failOpen) return;
    const failClose = failOpen && (await this.readyForFailClose());
    const updated = structuredClone(current);
    for (const w of updated.webhooks ?? []) {
      w.clientConfig.caBundle = this.caBundle;
      if (failClose) w.failurePolicy = 'Fail';
    }
    try {
      await this.api.replaceValidatingWebhookConfiguration({ name, body: updated });
    } catch (e) {
      throw new MeshError(
        'ISTIOD_ERR_KUBE_API',
        `cannot update ValidatingWebhookConfiguration ${name}: ${describeKubeError(e)}`,
        {
          cause: e,
        },
      );
    }
    this.log.info(
      { webhook: name, caBundle: caChange, failurePolicy: failClose ? 'Fail' : undefined },
      'webhook configuration updated',
    );
    if (failOpen && !failClose) throw new Error(`webhook ${name} is not ready to fail closed yet; retrying`);
  }

  private async readyForFailClose(): Promise<boolean> {
    if (this.failCloseReady) return true;
    const probe = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'Gateway',
      metadata: {
        name: 'invalid-gateway',
        namespace: this.namespace,
        labels: { [REVISION_LABEL]: this.revision },
        annotations: { [ALWAYS_REJECT_ANNOTATION]: 'true' },
      },
      spec: {},
    };
    let why: string;
    try {
      await this.custom.createNamespacedCustomObject({
        group: 'networking.istio.io',
        version: 'v1',
        namespace: this.namespace,
        plural: 'gateways',
        body: probe,
        dryRun: 'All',
      });
      why = 'the invalid probe Gateway was not refused';
    } catch (e) {
      why = describeKubeError(e);
      if ([DENIED, NOT_SERVED, NO_DRY_RUN].some((f) => why.includes(f))) {
        this.log.info('the webhook refused an invalid configuration; validation now fails closed');
        this.failCloseReady = true;
        // Every configuration of this revision may switch now, not only the one that asked.
        for (const w of this.webhooks.list())
          if (w.metadata?.labels?.[REVISION_LABEL] === this.revision && w.metadata.name !== undefined)
            this.queue.add(w.metadata.name);
        return true;
      }
    }
    this.log.info({ reason: why }, 'not ready to switch validation to fail closed');
    return false;
  }
}
