/**
 * The base chart's objects (istio manifests/charts/base/templates): Istio's CustomResourceDefinitions
 * (crds.yaml, each with its labels replaced by the chart's and `base.excludedCRDs` left out), the
 * `istiod-default-validator` ValidatingWebhookConfiguration (defaultrevision-validatingwebhookconfiguration.yaml,
 * webhook `validation.istio.io`, only when `defaultRevision` is set: istioctl's default profile sets it to ""), and
 * the `istio-reader-service-account` ServiceAccount (reader-serviceaccount.yaml).
 *
 * The CRDs are those amesh's API server validates Istio's kinds with (src/apiserver/schema), generated from
 * istio/api's protos as crd-all.gen.yaml is. Not rendered: the experimental stable-channel
 * ValidatingAdmissionPolicy.
 */
import { istioCustomResourceDefinitions } from '../apiserver/schema/custom-resource-definitions.js';
import { isRecord } from '../lib/record.js';
import { RELEASE, istioLabels, textAt, truthy, type RenderedObject } from './chart-helpers.js';
import { at, cloneValue, type Tree } from './value-tree.js';

/** The Istio API groups whose objects the validation webhooks check. */
export const ISTIO_CONFIG_GROUPS = [
  'security.istio.io',
  'networking.istio.io',
  'telemetry.istio.io',
  'extensions.istio.io',
];

/** A validation webhook as both charts write it: `Ignore` until istiod proves it serves, unless told otherwise. */
export function validationWebhook(values: Tree, name: string, service: string): Tree {
  const url = at(values, 'base.validationURL');
  const caBundle = at(values, 'base.validationCABundle');
  const failurePolicy = truthy(caBundle) ? 'Fail' : textAt(values, 'base.validationFailurePolicy', 'Ignore');
  return {
    name,
    clientConfig: {
      ...(truthy(url)
        ? { url }
        : { service: { name: service, namespace: at(values, 'global.istioNamespace'), path: '/validate' } }),
      ...(truthy(caBundle) ? { caBundle } : {}),
    },
    rules: [
      {
        operations: ['CREATE', 'UPDATE'],
        apiGroups: ISTIO_CONFIG_GROUPS,
        apiVersions: ['*'],
        resources: ['*'],
      },
    ],
    failurePolicy,
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
  };
}

export function renderBase(values: Tree): RenderedObject[] {
  const scope = at(values, 'global.resourceScope');
  const cluster = scope === 'all' || scope === 'cluster';
  const namespaced = scope === 'all' || scope === 'namespace';
  const labels = istioLabels('base');
  const out: RenderedObject[] = [];
  if (cluster) {
    const excluded = new Set(at(values, 'base.excludedCRDs') as string[]);
    const templated = at(values, 'base.enableCRDTemplates') === true;
    for (const crd of istioCustomResourceDefinitions() as RenderedObject[]) {
      if (templated && excluded.has(crd.metadata.name)) continue;
      const copy = cloneValue(crd);
      out.push(templated ? { ...copy, metadata: { ...copy.metadata, labels: { ...labels } } } : copy);
    }
    const defaultRevision = at(values, 'defaultRevision');
    if (truthy(defaultRevision)) {
      const rev = String(defaultRevision);
      out.push({
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: {
          name: 'istiod-default-validator',
          labels: {
            app: 'istiod',
            release: RELEASE,
            istio: 'istiod',
            'istio.io/rev': rev,
            'app.kubernetes.io/name': 'istiod',
            ...labels,
          },
        },
        webhooks: [validationWebhook(values, 'validation.istio.io', rev === 'default' ? 'istiod' : `istiod-${rev}`)],
      });
    }
  }
  const reader = at(values, 'global.readerServiceAccount');
  if (namespaced && at(values, 'global.enableReaderRBAC') !== false && !(isRecord(reader) && truthy(reader['name']))) {
    const pullSecrets = at(values, 'global.imagePullSecrets') as string[];
    out.push({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      ...(truthy(pullSecrets) ? { imagePullSecrets: pullSecrets.map((name) => ({ name })) } : {}),
      metadata: {
        name: 'istio-reader-service-account',
        namespace: String(at(values, 'global.istioNamespace')),
        labels: { app: 'istio-reader', release: RELEASE, 'app.kubernetes.io/name': 'istio-reader', ...labels },
      },
    });
  }
  return out;
}
