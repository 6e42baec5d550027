/**
 * The order and form `istioctl manifest generate` prints objects in (istio operator/cmd/mesh/manifest-generate.go
 * sortManifests, objectKindOrdering): CRDs first, then ServiceAccounts and ClusterRoles, ClusterRoleBindings,
 * ValidatingWebhookConfigurations, ConfigMaps, then workloads and most else, HorizontalPodAutoscalers, and Services
 * last; within a rank by API group, kind and name, the components' order kept between equals. Each object is YAML
 * with sorted keys (sigs.k8s.io/yaml), followed by a blank line and `---`.
 */
import { compareStrings } from '../lib/compare-strings.js';
import { toYaml, type RenderedObject } from './chart-helpers.js';

const groupOf = (o: RenderedObject): string => (o.apiVersion.includes('/') ? o.apiVersion.split('/')[0]! : '');

function rank(o: RenderedObject): number {
  switch (`${groupOf(o)}/${o.kind}`) {
    case 'apiextensions.k8s.io/CustomResourceDefinition':
      return -1000;
    case '/ServiceAccount':
    case 'rbac.authorization.k8s.io/ClusterRole':
      return 1;
    case 'rbac.authorization.k8s.io/ClusterRoleBinding':
      return 2;
    case 'admissionregistration.k8s.io/ValidatingWebhookConfiguration':
      return 3;
    case '/ConfigMap':
    case '/Secrets':
      return 100;
    case 'autoscaling/HorizontalPodAutoscaler':
      return 1001;
    case '/Service':
      return 10000;
    default:
      return 1000;
  }
}

/** istioctl's order of two objects: by rank, API group, kind and name. */
export function compareManifests(a: RenderedObject, b: RenderedObject): number {
  return (
    rank(a) - rank(b) ||
    compareStrings(groupOf(a), groupOf(b)) ||
    compareStrings(a.kind, b.kind) ||
    compareStrings(a.metadata.name, b.metadata.name)
  );
}

/** `objects` in istioctl's print order (a stable sort). */
export function sortManifests(objects: readonly RenderedObject[]): RenderedObject[] {
  return [...objects].sort(compareManifests);
}

/** The whole manifest, every object followed by a separator, as `istioctl manifest generate` prints it. */
export function manifestYaml(objects: readonly RenderedObject[]): string {
  return sortManifests(objects)
    .map((o) => `${toYaml(o)}\n\n---\n`)
    .join('');
}
