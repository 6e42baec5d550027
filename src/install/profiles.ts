/**
 * The installation profiles, as Istio ships them: the IstioOperator profiles istioctl starts from
 * (istio manifests/profiles/{default,ambient,minimal,empty}.yaml, every one laid over `default`), and the chart
 * profiles they name through `values.profile` and `values.global.platform` (manifests/helm-profiles/ambient.yaml,
 * platform-*.yaml), which each chart lays over its defaults (manifests/zzz_profile.yaml).
 *
 * As Istio's, the default profile installs the `istio-ingressgateway` ingress gateway (amesh's router), and the
 * ambient, minimal and empty profiles list it disabled; the egress gateway is listed disabled. Istio's `demo`
 * profile (which turns the egress gateway on), and its `preview`, `remote`, `stable` and OpenShift profiles are not
 * offered. Where amesh differs: the hub and tag are amesh's own image (`localhost/amesh:<version>`, podman's name
 * for a local build), put where istioctl puts the hub and tag it was built with (operator/pkg/render/manifest.go
 * hubTagOverlay).
 */
import { VERSION } from '../lib/version.js';
import { MeshError } from '../lib/errors.js';
import { cloneValue, merged, type Tree } from './value-tree.js';

/** Where the image is pulled from by default: podman names a local build `localhost/<name>:<tag>`. */
export const DEFAULT_HUB = 'localhost';
/** amesh's version: `npm run image` tags the image with it. */
export const DEFAULT_TAG = VERSION;

const DEFAULT: Tree = {
  apiVersion: 'install.istio.io/v1alpha1',
  kind: 'IstioOperator',
  metadata: { namespace: 'istio-system' },
  spec: {
    components: {
      base: { enabled: true },
      pilot: { enabled: true },
      ingressGateways: [{ name: 'istio-ingressgateway', enabled: true }],
      egressGateways: [{ name: 'istio-egressgateway', enabled: false }],
    },
    values: {
      defaultRevision: '',
      global: { istioNamespace: 'istio-system', configValidation: true },
      gateways: { 'istio-ingressgateway': {}, 'istio-egressgateway': {} },
      ztunnel: { resourceName: 'ztunnel' },
    },
  },
};

/** The ingress gateway as the profiles without it list it. */
const NO_INGRESS = [{ name: 'istio-ingressgateway', enabled: false }];

const PROFILES: Readonly<Record<string, Tree>> = {
  default: {},
  ambient: {
    spec: {
      components: { cni: { enabled: true }, ztunnel: { enabled: true }, ingressGateways: NO_INGRESS },
      values: { profile: 'ambient' },
    },
  },
  minimal: { spec: { components: { ingressGateways: NO_INGRESS } } },
  empty: {
    spec: { components: { base: { enabled: false }, pilot: { enabled: false }, ingressGateways: NO_INGRESS } },
  },
};

export const PROFILE_NAMES: readonly string[] = Object.keys(PROFILES);

/** The IstioOperator of `name` (default when empty): the default profile with the named one over it. */
export function istioOperatorProfile(name: string): Tree {
  const profile = PROFILES[name === '' ? 'default' : name];
  if (profile === undefined)
    throw new MeshError(
      'INSTALL_ERR_VALUES',
      `profile "${name}" not found: amesh has the profiles ${PROFILE_NAMES.join(', ')}`,
    );
  return merged(DEFAULT, { spec: { hub: DEFAULT_HUB, tag: DEFAULT_TAG } }, profile);
}

/** manifests/helm-profiles/ambient.yaml: what `values.profile: ambient` adds to each chart's defaults. */
const CHART_PROFILES: Readonly<Record<string, Tree>> = {
  ambient: {
    meshConfig: {
      defaultConfig: { proxyMetadata: { ISTIO_META_ENABLE_HBONE: 'true' } },
      serviceScopeConfigs: [
        {
          servicesSelector: { matchExpressions: [{ key: 'istio.io/global', operator: 'In', values: ['true'] }] },
          scope: 'GLOBAL',
        },
      ],
    },
    global: { variant: 'distroless' },
    pilot: { env: { PILOT_ENABLE_AMBIENT: 'true' } },
    cni: { ambient: { enabled: true } },
  },
};

/** manifests/helm-profiles/platform-*.yaml, those that only move the CNI's host paths. */
const PLATFORMS: Readonly<Record<string, Tree>> = {
  k3d: { cni: { cniConfDir: '/var/lib/rancher/k3s/agent/etc/cni/net.d', cniBinDir: '/bin' } },
  k3s: { cni: { cniConfDir: '/var/lib/rancher/k3s/agent/etc/cni/net.d', cniBinDir: '/var/lib/rancher/k3s/data/cni' } },
  microk8s: {
    cni: {
      cniConfDir: '/var/snap/microk8s/current/args/cni-network',
      cniBinDir: '/var/snap/microk8s/current/opt/cni/bin',
    },
  },
  minikube: { cni: { cniNetnsDir: '/var/run/docker/netns' } },
};

/**
 * What a chart lays over its defaults for `values.profile` (or `global.profile`) and `global.platform`
 * (`platform`), as zzz_profile.yaml does; an unknown name fails as the chart fails.
 */
export function chartProfile(profile: string, platform: string): Tree {
  const out: Tree = {};
  if (profile !== '') {
    const p = CHART_PROFILES[profile];
    if (p === undefined) throw new MeshError('INSTALL_ERR_VALUES', `unknown profile ${profile}`);
    Object.assign(out, cloneValue(p));
  }
  if (platform !== '') {
    const p = PLATFORMS[platform];
    if (p === undefined)
      throw new MeshError(
        'INSTALL_ERR_VALUES',
        `unknown platform ${platform}: amesh has the platforms ${Object.keys(PLATFORMS).join(', ')}`,
      );
    return merged(out, p);
  }
  return out;
}
