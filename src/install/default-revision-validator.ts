/**
 * The default revision's validating webhook, which `istioctl install` deploys beside the charts' objects rather than
 * among them (istio operator/pkg/webhook/webhook.go WebhooksToDeploy, istioctl/pkg/tag/generate.go, the
 * `manifests/charts/default` chart): `istiod-default-validator`, webhook `validation.istio.io`, for the Istio
 * objects that carry no `istio.io/rev` label, which the istiod chart's `rev.validation.istio.io` does not select.
 * Without it, `kubectl apply` of an unlabelled invalid policy would not reach istiod's webhook.
 *
 * It is deployed when webhooks are not left to an operator (`global.operatorManageWebhooks`) and the install is of
 * the default revision, or no default tag exists yet. istioctl takes its failure policy from the revision's own
 * webhooks; here it starts `Ignore`, as the chart writes it, and istiod (which keeps the webhooks labelled with its
 * revision) sets its caBundle and `Fail` once it serves. It carries the install's owner labels, and is never pruned.
 */
import { VERSION } from '../lib/version.js';
import { istioLabels, type RenderedObject } from './chart-helpers.js';
import { istioNamespace } from './generate-manifest.js';
import { validationWebhook } from './render-base.js';
import { OWNING_RESOURCE_NOT_PRUNED, withOwnerLabels } from './owner-labels.js';
import { at, getString, type Tree } from './value-tree.js';

export const DEFAULT_VALIDATOR = 'istiod-default-validator';
/** The tag label istioctl's tag webhooks carry. */
const TAG_LABEL = 'istio.io/tag';

/**
 * The validator to deploy with the install of `iop`, or undefined when none is needed; `tagExists`: whether the
 * cluster already has a default tag's validator.
 */
export function defaultRevisionValidator(iop: Readonly<Tree>, tagExists: boolean): RenderedObject | undefined {
  const revision = getString(iop, ['spec', 'values', 'revision']);
  if (at(iop, 'spec.values.global.operatorManageWebhooks') === true) return undefined;
  if (tagExists && revision !== '') return undefined;
  const values: Tree = {
    base: { validationURL: getString(iop, ['spec', 'values', 'base', 'validationURL']) },
    global: { istioNamespace: istioNamespace(iop) },
  };
  const webhook = validationWebhook(values, 'validation.istio.io', revision === '' ? 'istiod' : `istiod-${revision}`);
  const o: RenderedObject = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: {
      name: DEFAULT_VALIDATOR,
      labels: {
        app: 'istiod',
        istio: 'istiod',
        'istio.io/rev': revision === '' ? 'default' : revision,
        [TAG_LABEL]: 'default',
        'app.kubernetes.io/name': 'istiod',
        ...istioLabels('istiod'),
        'helm.sh/chart': `default-${VERSION}`,
      },
    },
    webhooks: [
      { ...webhook, objectSelector: { matchExpressions: [{ key: 'istio.io/rev', operator: 'DoesNotExist' }] } },
    ],
  };
  const owned = withOwnerLabels(o, iop, 'Pilot');
  return {
    ...owned,
    metadata: { ...owned.metadata, labels: { ...owned.metadata.labels, [OWNING_RESOURCE_NOT_PRUNED]: 'true' } },
  };
}
