/**
 * The components an install is made of, as istioctl knows them (istio operator/pkg/component/component.go): each
 * one's name in the `operator.istio.io/component` label, its chart, where its values live in spec.values, the
 * workload istioctl patches with `components.<name>.k8s`, and how the progress lines name it. Which components an
 * IstioOperator enables is decided as istioctl's Component.Get decides it: `components.<name>.enabled`, true when
 * the component is listed without it, else the component's default (base, pilot and the ingress gateway on, cni
 * and ztunnel off). The gateways are lists (`components.ingressGateways[]`), one chart rendering per enabled
 * entry, each named by its `name` (default `istio-ingressgateway`) and in its `namespace`; their
 * `values.gateways.istio-<kind>gateway.enabled` turns every listed entry on.
 *
 * amesh's ingress gateway runs `amesh proxy router` (render-ingress-gateway.ts). amesh has no egress gateway: an
 * enabled egress gateway is refused.
 */
import { MeshError } from '../lib/errors.js';
import { isRecord } from '../lib/record.js';
import type { ChartName } from './chart-defaults.js';
import { getPath, getString, type Tree } from './value-tree.js';

export type ComponentName = 'Base' | 'Pilot' | 'IngressGateways' | 'Cni' | 'Ztunnel';

export interface Component {
  /** istioctl's UserFacingName: the `operator.istio.io/component` label. */
  readonly name: ComponentName;
  /** The key under spec.components. */
  readonly specName: string;
  readonly chart: ChartName;
  readonly enabledByDefault: boolean;
  /** Whether spec.components holds a list of them (the gateways), each rendered on its own. */
  readonly multi?: boolean;
  /** Where the component's chart values sit under spec.values (ToHelmValuesTreeRoot). */
  readonly valuesRoot: string;
  /** The workload `k8s` settings patch, and its container; a gateway's is named after its entry. */
  readonly workload?: { readonly kind: 'Deployment' | 'DaemonSet'; readonly name: string; readonly container: string };
  /** How progress lines name it, and its icon (operator/pkg/component/component.go). */
  readonly title: string;
  readonly icon: string;
}

/** The ingress gateway's default name, and the Deployment's when an entry has none (component.go ResourceName). */
export const INGRESS_GATEWAY_NAME = 'istio-ingressgateway';

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
    name: 'IngressGateways',
    specName: 'ingressGateways',
    chart: 'ingress',
    enabledByDefault: true,
    multi: true,
    valuesRoot: `gateways.${INGRESS_GATEWAY_NAME}`,
    workload: { kind: 'Deployment', name: INGRESS_GATEWAY_NAME, container: 'istio-proxy' },
    title: 'Ingress gateways',
    icon: '🛬',
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

/** A gateway entry's name (`name`), the component's own workload name when it has none. */
export function gatewayName(c: ComponentSpec): string {
  return getString(c.spec, ['name'], c.component.workload?.name ?? '');
}

/** The name of the workload `k8s` patches: a gateway's own, istiod's with its revision. */
export function workloadName(c: ComponentSpec, revision: string): string {
  const workload = c.component.workload?.name ?? '';
  if (c.component.multi === true) return gatewayName(c);
  return c.component.name === 'Pilot' && revision !== '' && revision !== 'default'
    ? `${workload}-${revision}`
    : workload;
}

/** The entries of a gateway list that are rendered (Component.Get for a Multi component). */
function gatewayEntries(iop: Readonly<Tree>, specName: string, byDefault: boolean, kind: string): Tree[] {
  const alt = getPath(iop, ['spec', 'values', 'gateways', `istio-${kind}gateway`, 'enabled']) === true;
  const list = getPath(iop, ['spec', 'components', specName]);
  if (!Array.isArray(list)) return byDefault || alt ? [{}] : [];
  return list.filter((g): g is Tree => isRecord(g) && (g['enabled'] !== false || alt));
}

/** An object name istioctl takes for a gateway (operator/pkg/apis/validation/validation.go objectNameRegexp). */
const GATEWAY_NAME = /^[a-z0-9.-]{1,254}$/;

/**
 * The Service ports of a gateway entry that would bind below 1024 in a pod that is not root, refused as istioctl's
 * checkServicePorts refuses them: a numeric targetPort under 1024, or none with a port of 1024 or less.
 */
function checkGatewayPorts(iop: Readonly<Tree>, entry: Tree, name: string): void {
  if (getPath(iop, ['spec', 'values', 'gateways', 'istio-ingressgateway', 'runAsRoot']) === true) return;
  const ports = getPath(entry, ['k8s', 'service', 'ports']);
  if (!Array.isArray(ports)) return;
  for (const p of ports) {
    if (!isRecord(p) || typeof p['targetPort'] === 'string') continue;
    const port = typeof p['port'] === 'number' ? p['port'] : 0;
    const target = typeof p['targetPort'] === 'number' ? p['targetPort'] : 0;
    if (target === 0 && port > 1024) continue;
    if (target < 1024)
      throw new MeshError(
        'INSTALL_ERR_VALUES',
        `port ${getString(p, ['name'], '')}/${String(port)} in ingress gateway ${name}: targetPort ${target === 0 ? `unset (so ${String(port)})` : String(target)} needs root to bind; set a targetPort above 1024 (the gateway listens on it), or values.gateways.istio-ingressgateway.runAsRoot=true`,
      );
  }
}

/** The components `iop` enables, in install order; the enabled gateways each once, in their list's order. */
export function enabledComponents(iop: Readonly<Tree>): ComponentSpec[] {
  const egress = gatewayEntries(iop, 'egressGateways', false, 'egress');
  if (egress.length > 0)
    throw new MeshError(
      'INSTALL_ERR_VALUES',
      `spec.components.egressGateways: amesh has no egress gateway yet; set enabled: false on ${egress.map((g) => getString(g, ['name'], 'istio-egressgateway')).join(', ')} (and leave values.gateways.istio-egressgateway.enabled unset)`,
    );
  const defaultNamespace = getString(iop, ['metadata', 'namespace'], 'istio-system');
  const out: ComponentSpec[] = [];
  for (const component of COMPONENTS) {
    if (component.multi === true) {
      const seen = new Set<string>();
      for (const spec of gatewayEntries(iop, component.specName, component.enabledByDefault, 'ingress')) {
        const c: ComponentSpec = { component, namespace: getString(spec, ['namespace'], defaultNamespace), spec };
        const name = gatewayName(c);
        if (!GATEWAY_NAME.test(name))
          throw new MeshError(
            'INSTALL_ERR_VALUES',
            `spec.components.${component.specName}: invalid name ${JSON.stringify(name)}: a gateway's name (its Deployment's and Service's) is lower-case letters, digits, '-' and '.'`,
          );
        if (seen.has(`${c.namespace}/${name}`))
          throw new MeshError(
            'INSTALL_ERR_VALUES',
            `spec.components.${component.specName}: two gateways named ${name} in namespace ${c.namespace}; give each its own name or namespace`,
          );
        seen.add(`${c.namespace}/${name}`);
        checkGatewayPorts(iop, spec, name);
        out.push(c);
      }
      continue;
    }
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
