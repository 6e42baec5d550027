/**
 * The values one chart renders with, computed as istioctl and the chart compute them:
 * - istioctl gives each chart spec.values, with the component's `hub`/`tag` and the parts of its `k8s` settings the
 *   templates test (hpaSpec min/max, replicaCount, resources' cpu) copied in, and flattens `values.ztunnel` for the
 *   ztunnel chart, which takes its values unprefixed (operator/pkg/render/manifest.go
 *   applyComponentValuesToHelmValues); a gateway entry's `name`, `label` (which replaces the values' `labels`, the
 *   chart's `app` and `istio` staying under it) and `k8s.service.ports` become its chart's `name`, `labels` and
 *   `ports` under values.gateways.istio-ingressgateway;
 * - the chart lays the profile (`profile`, `global.platform`) over its defaults, and the values over that
 *   (manifests/zzz_profile.yaml); the ztunnel chart first lays `global` over its top level too (its
 *   FLATTEN_GLOBALS), and istiod and istio-cni lift `pilot.*` and `cni.*` to the top (zzy_descope_legacy.yaml).
 * A value of null in the user's values changes nothing, as Helm's mergeOverwrite leaves it.
 */
import { MeshError } from '../lib/errors.js';
import { isRecord } from '../lib/record.js';
import { CHART_DEFAULTS } from './chart-defaults.js';
import { goString } from './chart-helpers.js';
import { gatewayName, type ComponentSpec } from './components.js';
import { chartProfile } from './profiles.js';
import { cloneValue, getPath, getString, getTree, mergeInto, setPath, type Tree } from './value-tree.js';

/** mergeOverwrite as Helm's sprig does it: maps merge, null leaves the base, anything else replaces. */
function helmMerge(base: Tree, overlay: Tree): Tree {
  for (const [k, v] of Object.entries(overlay)) {
    if (v === null || v === undefined) continue;
    const current = base[k];
    if (isRecord(v) && isRecord(current)) helmMerge(current, v);
    else base[k] = cloneValue(v);
  }
  return base;
}

/** spec.values as istioctl hands them to the component's chart. */
function componentValues(c: ComponentSpec, iop: Readonly<Tree>): Tree {
  const values = cloneValue(getTree(iop, ['spec', 'values']) ?? {});
  const root = c.component.valuesRoot.split('.');
  const at = (...path: string[]): string[] => [...root, ...path];
  const k8s = getTree(c.spec, ['k8s']);
  if (c.component.multi === true) {
    setPath(values, at('name'), gatewayName(c));
    setPath(values, at('labels'), cloneValue(getTree(c.spec, ['label']) ?? {}));
    const ports = getPath(k8s, ['service', 'ports']);
    if (Array.isArray(ports) && ports.length > 0) setPath(values, at('ports'), cloneValue(ports));
  }
  if (c.component.workload?.kind === 'Deployment' && k8s !== undefined) {
    const min = getPath(k8s, ['hpaSpec', 'minReplicas']);
    const max = getPath(k8s, ['hpaSpec', 'maxReplicas']);
    if (typeof min === 'number') setPath(values, at('autoscaleMin'), min);
    if (typeof max === 'number' && max > 0) setPath(values, at('autoscaleMax'), max);
    if (typeof k8s['replicaCount'] === 'number' && k8s['replicaCount'] > 0)
      setPath(values, at('replicaCount'), k8s['replicaCount']);
  }
  for (const kind of ['limits', 'requests']) {
    const cpu = getPath(k8s, ['resources', kind, 'cpu']);
    if (cpu !== undefined && cpu !== null && cpu !== 0 && cpu !== '0')
      setPath(values, at('resources', kind, 'cpu'), cpu);
  }
  const hub = getString(c.spec, ['hub']);
  if (hub !== '') setPath(values, at('hub'), hub);
  const tag = c.spec['tag'];
  if (tag !== undefined && tag !== null && tag !== '') setPath(values, at('tag'), goString(tag));
  if (c.component.chart !== 'ztunnel') return values;
  const flat: Tree = { global: values['global'] ?? {} };
  for (const [k, v] of Object.entries(values)) if (!isRecord(v)) flat[k] = v;
  return mergeInto(flat, getTree(values, ['ztunnel']) ?? {});
}

/** The values the component's chart renders with (see the file comment). */
export function chartValues(c: ComponentSpec, iop: Readonly<Tree>): Tree {
  const values = componentValues(c, iop);
  const compatibility = getString(values, ['compatibilityVersion']);
  if (compatibility !== '')
    throw new MeshError(
      'INSTALL_ERR_VALUES',
      `unknown compatibility version ${compatibility}: amesh renders only its own version's defaults`,
    );
  const profile = chartProfile(
    getString(values, ['profile']) || getString(values, ['global', 'profile']),
    getString(values, ['platform']) || getString(values, ['global', 'platform']),
  );
  const defaults = helmMerge(cloneValue(CHART_DEFAULTS[c.component.chart]), profile);
  if (c.component.chart === 'ztunnel') {
    helmMerge(defaults, getTree(profile, ['global']) ?? {});
    helmMerge(defaults, getTree(values, ['global']) ?? {});
  }
  const out = helmMerge(defaults, values);
  if (c.component.chart === 'istiod') helmMerge(out, getTree(out, ['pilot']) ?? {});
  if (c.component.chart === 'cni') helmMerge(out, getTree(out, ['cni']) ?? {});
  return out;
}
