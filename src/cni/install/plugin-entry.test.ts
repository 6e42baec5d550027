import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse as parseYaml } from 'yaml';
import { CNI_AGENT_DEFAULTS } from '../agent/cni-agent-config.js';
import { parsePluginConfig } from '../plugin/plugin-config.js';
import { pluginEntry, pluginLogLevel, standaloneConfig } from './plugin-entry.js';

const SETTINGS = {
  runDir: '/var/run/istio-cni',
  podNamespace: 'istio-system',
  excludeNamespaces: ['kube-system'],
  enablementSelectors: parseYaml(CNI_AGENT_DEFAULTS.enablementSelector) as unknown,
  logLevel: 'info',
  enableAmbientDetectionRetry: false,
};

test("the entry is Istio's istio-cni entry, field for field and in its (sorted) order, with our name and type", () => {
  const entry = pluginEntry(SETTINGS);
  // As Istio's installer writes it for the chart's defaults (cni/pkg/install/testdata/list.conflist.golden shape).
  assert.equal(
    JSON.stringify(entry),
    JSON.stringify({
      ambient_enabled: true,
      cni_agent_run_dir: '/var/run/istio-cni',
      dns: {},
      enable_ambient_detection_retry: false,
      enablement_selectors: [
        { namespaceSelector: {}, podSelector: { matchLabels: { 'istio.io/dataplane-mode': 'ambient' } } },
        {
          namespaceSelector: { matchLabels: { 'istio.io/dataplane-mode': 'ambient' } },
          podSelector: {
            matchExpressions: [{ key: 'istio.io/dataplane-mode', operator: 'NotIn', values: ['none'] }],
          },
        },
      ],
      exclude_namespaces: ['kube-system'],
      ipam: {},
      name: 'amesh-cni',
      native_nftables: false,
      plugin_log_level: 'info',
      pod_namespace: 'istio-system',
      type: 'amesh-cni',
    }),
  );
  assert.equal(Object.isFrozen(entry), true);
  assert.equal(pluginEntry({ ...SETTINGS, excludeNamespaces: [] })['exclude_namespaces'], null);
});

test('the plugin reads the entry back as the agent configured it', () => {
  const cfg = parsePluginConfig({
    cniVersion: '1.0.0',
    name: 'k8s-pod-network',
    fields: { ...pluginEntry({ ...SETTINGS, enableAmbientDetectionRetry: true }), cniVersion: '1.0.0' },
  });
  assert.equal(cfg.ambientEnabled, true);
  assert.equal(cfg.socketPath, '/var/run/istio-cni/pluginevent.sock');
  assert.equal(cfg.kubeconfigPath, '/var/run/istio-cni/istio-cni-kubeconfig');
  assert.deepEqual(cfg.excludeNamespaces, ['kube-system']);
  assert.equal(cfg.podNamespace, 'istio-system');
  assert.equal(cfg.enableAmbientDetectionRetry, true);
  assert.equal(cfg.enablementSelectors.selects({}, { 'istio.io/dataplane-mode': 'ambient' }), true);
});

test("the plugin's log level is the agent's cni-plugin scope, else its default, in Istio's level names", () => {
  assert.equal(pluginLogLevel('info'), 'info');
  assert.equal(pluginLogLevel('warn,cni-plugin=debug'), 'debug');
  assert.equal(pluginLogLevel('zds=debug'), 'info');
  assert.equal(pluginLogLevel('silent'), 'none');
  assert.equal(pluginLogLevel('trace'), 'debug');
});

test("a standalone config is the entry with Istio's cniVersion 0.3.1", () => {
  const conf = JSON.parse(standaloneConfig(pluginEntry(SETTINGS))) as Record<string, unknown>;
  assert.equal(conf['cniVersion'], '0.3.1');
  assert.equal(conf['type'], 'amesh-cni');
});
