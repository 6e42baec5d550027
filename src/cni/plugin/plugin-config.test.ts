import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../../lib/errors.js';
import { pluginNetworkConfig } from '../../../test/helpers/cni-network-config.js';
import { decodeNetworkConfig, parseNetworkConfig } from './network-config.js';
import { parsePluginConfig } from './plugin-config.js';

const configError = (message: RegExp) => (e: unknown) => isMeshError(e, 'CNI_ERR_CONFIG') && message.test(e.message);
const parse = (fields: Record<string, unknown>) => parsePluginConfig(parseNetworkConfig(fields, 'ADD'));

test("Istio's installer config: socket and kubeconfig under cni_agent_run_dir, selectors compiled, prevResult's IPs read, all frozen", () => {
  const cfg = parse(pluginNetworkConfig('/var/run/istio-cni'));
  assert.equal(cfg.cniVersion, '1.0.0');
  assert.equal(cfg.socketPath, '/var/run/istio-cni/pluginevent.sock');
  assert.equal(cfg.kubeconfigPath, '/var/run/istio-cni/istio-cni-kubeconfig');
  assert.equal(cfg.ambientEnabled, true);
  assert.deepEqual(cfg.excludeNamespaces, ['kube-system']);
  assert.equal(cfg.podNamespace, 'istio-system');
  assert.equal(cfg.logLevel, 'info');
  assert.equal(cfg.enablementSelectors.selects({ 'istio.io/dataplane-mode': 'ambient' }, {}), true);
  assert.equal(cfg.prevResult?.ips.length, 1);
  assert.ok(Object.isFrozen(cfg) && Object.isFrozen(cfg.excludeNamespaces));
});

test("absent and null fields take Go's zero values, as Istio's own testdata writes them (exclude_namespaces: null)", () => {
  const cfg = parse({
    cniVersion: '0.3.1',
    name: 'istio-cni',
    type: 'istio-cni',
    exclude_namespaces: null,
    plugin_log_level: null,
    ipam: {},
    dns: {},
  });
  assert.equal(cfg.ambientEnabled, false);
  assert.deepEqual(cfg.excludeNamespaces, []);
  assert.equal(cfg.podNamespace, '');
  assert.equal(cfg.enableAmbientDetectionRetry, false);
  assert.equal(cfg.prevResult, undefined);
});

test("plugin_log_level takes Istio's names, none meaning silent", () => {
  assert.equal(parse(pluginNetworkConfig('/r', { plugin_log_level: 'debug' })).logLevel, 'debug');
  assert.equal(parse(pluginNetworkConfig('/r', { plugin_log_level: 'none' })).logLevel, 'silent');
  assert.throws(
    () => parse(pluginNetworkConfig('/r', { plugin_log_level: 'loud' })),
    configError(/^"plugin_log_level" "loud" is not a log level/),
  );
});

test('a field of the wrong type is a config error naming the field', () => {
  assert.throws(
    () => parse(pluginNetworkConfig('/r', { ambient_enabled: 'true' })),
    configError(/^"ambient_enabled" must be true or false \(got "true"\)/),
  );
  assert.throws(
    () => parse(pluginNetworkConfig('/r', { exclude_namespaces: 'kube-system' })),
    configError(/^"exclude_namespaces" must be a list of namespace names/),
  );
  assert.throws(() => parse(pluginNetworkConfig('/r', { pod_namespace: 7 })), configError(/^"pod_namespace"/));
  assert.throws(
    () => parse(pluginNetworkConfig('/r', { enable_ambient_detection_retry: 1 })),
    configError(/^"enable_ambient_detection_retry"/),
  );
  assert.throws(
    () =>
      parse(
        pluginNetworkConfig('/r', {
          enablement_selectors: [{ podSelector: { matchExpressions: [{ key: 'k', operator: 'Gt', values: ['1'] }] } }],
        }),
      ),
    configError(/^"enablement_selectors\[0\]\.podSelector\.matchExpressions\[0\]\.operator"/),
  );
  assert.throws(
    () => parse(pluginNetworkConfig('/r', { prevResult: { ips: [{ address: '10.0.0.5' }] } })),
    configError(/^"prevResult\.ips\[0\]\.address" must be an IP address in CIDR notation/),
  );
});

test('with ambient on, cni_agent_run_dir must be an absolute path', () => {
  assert.throws(
    () => parse(pluginNetworkConfig('', {})),
    configError(/^"cni_agent_run_dir" must be the node agent's run directory as an absolute path/),
  );
  assert.throws(() => parse(pluginNetworkConfig('run/istio-cni', {})), configError(/"cni_agent_run_dir"/));
  assert.equal(parse(pluginNetworkConfig('', { ambient_enabled: false })).ambientEnabled, false);
});

test('stdin that is not a JSON object is a decoding error; a missing or invalid name a config error', () => {
  const decodeError = (message: RegExp) => (e: unknown) => isMeshError(e, 'CNI_ERR_DECODE') && message.test(e.message);
  assert.throws(() => decodeNetworkConfig('{"cniVersion":'), decodeError(/not JSON/));
  assert.throws(() => decodeNetworkConfig('[1]'), decodeError(/not a JSON object \(got an array\)/));
  assert.throws(() => decodeNetworkConfig('null'), decodeError(/got null/));
  assert.throws(() => parseNetworkConfig({ cniVersion: '1.0.0' }, 'DEL'), configError(/no "name"/));
  assert.throws(
    () => parseNetworkConfig({ cniVersion: '1.0.0', name: 'my net' }, 'DEL'),
    configError(/"my net" is not a valid network name/),
  );
});

test("DEL and CHECK read only the spec's fields: a broken plugin field does not fail them", () => {
  const net = parseNetworkConfig(pluginNetworkConfig('relative', { ambient_enabled: 'yes' }), 'DEL');
  assert.equal(net.name, 'k8s-pod-network');
  assert.throws(() => parsePluginConfig(net), configError(/"ambient_enabled"/));
});
