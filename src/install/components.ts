/**
 * The components an install is made of, as istioctl knows them (istio operator/pkg/component/component.go): each
 * one's name in the `operator.istio.io/component` label, its chart, where its values live in spec.values, the
 * workload istioctl patches with `components.<name>.k8s`, and how the progress lines name it. Which components an
 * IstioOperator enables is decided as istioctl's Component.Get decides it: `components.<name>.enabled`, true when
 * the component is listed without it, else the component's default (base and pilot on, cni and ztunnel off).
 * amesh has no gateways: an enabled ingress or egress gateway is refused.
 */
import { MeshError } from '../lib/errors.js';
import { isRecord } from '../lib/record.js';
import type { ChartName } from './chart-defaults.js';
import { getPath, getString, type Tree } from './value-tree.js';

export type ComponentName = 'Base' | 'Pilot' | 'Cni' | 'Ztunnel';

export interface Component {
  /** istioctl's UserFacingName: the `operator.istio.io/component` label. */
  readonly name: ComponentName;
  /** The key under spec.components. */
  readonly specName: string;
  readonly chart: ChartName;
  readonly enabledByDefault: boolean;
  /** Where the component's chart values sit under spec.values (ToHelmValuesTreeRoot). */
  readonly valuesRoot: string;
  /** The workload `k8s` settings patch, and its container. */
  readonly workload?: { readonly kind: 'Deployment' | 'DaemonSet'; readonly name: string; readonly container: string };
  /** How progress lines name it, and its icon (operator/pkg/component/component.go). */
  readonly title: string;
  readonly icon: string;
}

/** In istioctl's order (AllComponents), which is also the order their objects are generated in. */
export const COMPONENTS: readonly Component[] = [
  {
    name: 'Base',
    specName: 'base',
    chart: 'base',
    enabledByDefault: true,
    valuesRoot: 'global',
    title: 'Istio core',
    icon: '⛵️',
  },
  {
    name: 'Pilot',
    specName: 'pilot',
    chart: 'istiod',
    enabledByDefault: true,
    valuesRoot: 'pilot',
    workload: { kind: 'Deployment', name: 'istiod', container: 'discovery' },
    title: 'Istiod',
    icon: '🧠',
  },
  {
    name: 'Cni',
    specName: 'cni',
    chart: 'cni',
    enabledByDefault: false,
    valuesRoot: 'cni',
    workload: { kind: 'DaemonSet', name: 'istio-cni-node', container: 'install-cni' },
    title: 'CNI',
    icon: '🪢',
  },
  {
    name: 'Ztunnel',
    specName: 'ztunnel',
    chart: 'ztunnel',
    enabledByDefault: false,
    valuesRoot: 'ztunnel',
    workload: { kind: 'DaemonSet', name: 'ztunnel', container: 'istio-proxy' },
    title: 'Ztunnel',
    icon: '🔒',
  },
];

/** An enabled component, its namespace and its spec.components entry as given. */
export interface ComponentSpec {
  readonly component: Component;
  readonly namespace: string;
  readonly spec: Tree;
}

/** The components `iop` enables, in install order. */
export function enabledComponents(iop: Readonly<Tree>): ComponentSpec[] {
  for (const gateways of ['ingressGateways', 'egressGateways']) {
    const list = getPath(iop, ['spec', 'components', gateways]);
    const enabled = Array.isArray(list) ? list.filter((g) => isRecord(g) && g['enabled'] !== false) : [];
    if (enabled.length > 0)
      throw new MeshError(
        'INSTALL_ERR_VALUES',
        `spec.components.${gateways}: amesh has no gateways (Envoy); set enabled: false on ${enabled.map((g) => getString(g, ['name'], '(unnamed)')).join(', ')}`,
      );
  }
  const defaultNamespace = getString(iop, ['metadata', 'namespace'], 'istio-system');
  const out: ComponentSpec[] = [];
  for (const component of COMPONENTS) {
    const spec = getPath(iop, ['spec', 'components', component.specName]);
    if (!isRecord(spec)) {
      if (component.enabledByDefault) out.push({ component, namespace: defaultNamespace, spec: {} });
      continue;
    }
    if (spec['enabled'] === false) continue;
    out.push({ component, namespace: getString(spec, ['namespace'], defaultNamespace), spec });
  }
  return out;
}
