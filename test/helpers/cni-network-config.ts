/**
 * Network configs for amesh-cni as Istio's installer writes its plugin's entry (istio cni/pkg/install/cniconfig.go;
 * testdata/istio-owned.conflist.golden), for unit and integration tests.
 */

/** Istio's default ambient enablement selectors (manifests/charts/istio-cni values.yaml ambient.enablementSelectors). */
export const ISTIO_DEFAULT_SELECTORS = [
  { podSelector: { matchLabels: { 'istio.io/dataplane-mode': 'ambient' } } },
  {
    podSelector: { matchExpressions: [{ key: 'istio.io/dataplane-mode', operator: 'NotIn', values: ['none'] }] },
    namespaceSelector: { matchLabels: { 'istio.io/dataplane-mode': 'ambient' } },
  },
];

/** What bridge + host-local hand the next plugin for one pod IP (a 1.0.0 result). */
export const BRIDGE_RESULT = {
  cniVersion: '1.0.0',
  interfaces: [
    { name: 'cni0', mac: '6e:39:9a:3b:1c:01' },
    { name: 'veth1a2b3c4d', mac: 'a2:4f:11:0e:9b:22' },
    { name: 'eth0', mac: '0a:58:0a:f4:01:05', sandbox: '/var/run/netns/cni-1234' },
  ],
  ips: [{ interface: 2, address: '10.244.1.5/24', gateway: '10.244.1.1' }],
  routes: [{ dst: '0.0.0.0/0' }],
  dns: {},
};

/** amesh-cni's entry of a chained conflist, as the runtime passes it: ambient on, Istio's defaults, `prevResult` set. */
export function pluginNetworkConfig(runDir: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    cniVersion: '1.0.0',
    name: 'k8s-pod-network',
    type: 'amesh-cni',
    plugin_log_level: 'info',
    cni_agent_run_dir: runDir,
    ambient_enabled: true,
    enablement_selectors: ISTIO_DEFAULT_SELECTORS,
    exclude_namespaces: ['kube-system'],
    pod_namespace: 'istio-system',
    native_nftables: false,
    enable_ambient_detection_retry: false,
    prevResult: BRIDGE_RESULT,
    ...over,
  };
}
