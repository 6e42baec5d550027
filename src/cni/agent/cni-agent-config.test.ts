import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../../lib/errors.js';
import { loadCniAgentConfig, splitExcludeNamespaces } from './cni-agent-config.js';

test("with only NODE_NAME the agent runs with an Istio install's defaults", () => {
  const c = loadCniAgentConfig({}, { NODE_NAME: 'node-a' });
  assert.equal(c.runDir, '/var/run/istio-cni');
  assert.equal(c.pluginSocket, '/var/run/istio-cni/pluginevent.sock');
  assert.equal(c.pluginKubeconfig, '/var/run/istio-cni/istio-cni-kubeconfig');
  assert.equal(c.ztunnelSocket, '/var/run/ztunnel/ztunnel.sock');
  assert.deepEqual(
    [c.dnsCapture, c.ipv6, c.reconcilePodRulesOnStartup, c.disableSafeUpgrade],
    [true, true, true, false],
  );
  assert.deepEqual(c.excludeNamespaces, ['kube-system']);
  assert.equal(c.systemNamespace, 'istio-system');
  assert.deepEqual(
    [c.hostProbeSnatIp, c.hostProbeSnatIpv6],
    ['169.254.7.127', 'fd16:9254:7127:1337:ffff:ffff:ffff:ffff'],
  );
  assert.deepEqual(c.readinessAddress, { host: '0.0.0.0', port: 8000 });
  assert.deepEqual(c.monitoringAddress, { host: '0.0.0.0', port: 15014 });
  assert.equal(c.enablementSelectors.selects({ 'istio.io/dataplane-mode': 'ambient' }, {}), true);
  assert.equal(c.enablementSelectors.selects({}, { 'istio.io/dataplane-mode': 'ambient' }), true);
  assert.equal(
    c.enablementSelectors.selects({ 'istio.io/dataplane-mode': 'none' }, { 'istio.io/dataplane-mode': 'ambient' }),
    false,
  );
  assert.equal(Object.isFrozen(c), true);
  assert.deepEqual(
    {
      netDir: c.install?.netDir,
      confName: c.install?.confName,
      chained: c.install?.chained,
      confMode: c.install?.confMode,
      binDir: c.install?.binDir,
      runtime: c.install?.plugin.runtime,
    },
    {
      netDir: '/host/etc/cni/net.d',
      confName: '',
      chained: true,
      confMode: 0o600,
      binDir: '/host/opt/cni/bin',
      runtime: process.execPath,
    },
  );
  assert.match(c.install?.plugin.bundle ?? '', /\/dist\/cni-plugin\/amesh-cni\.mjs$/);
  assert.deepEqual(
    [c.install?.entry['cni_agent_run_dir'], c.install?.entry['exclude_namespaces'], c.install?.entry['pod_namespace']],
    ['/var/run/istio-cni', ['kube-system'], ''],
  );
});

test("the installer takes Istio's env names, amesh's for its own paths, and CNI_ENABLE_INSTALL=false turns it off", () => {
  const c = loadCniAgentConfig(
    {},
    {
      NODE_NAME: 'n',
      MOUNTED_CNI_NET_DIR: '/tmp/net.d',
      CNI_CONF_NAME: '05-cilium.conflist',
      CHAINED_CNI_PLUGIN: 'false',
      CNI_CONF_GROUP_READ: 'true',
      HOST_CNI_BIN_DIR: '/tmp/bin',
      AMESH_CNI_PLUGIN_BUNDLE: '/tmp/amesh-cni.mjs',
      AMESH_CNI_PLUGIN_RUNTIME: '/tmp/node',
      ENABLE_AMBIENT_DETECTION_RETRY: 'true',
      EXCLUDE_NAMESPACES: '',
      LOG_LEVEL: 'info,cni-plugin=debug',
    },
  );
  assert.deepEqual(
    [c.install?.netDir, c.install?.confName, c.install?.chained, c.install?.confMode, c.install?.binDir],
    ['/tmp/net.d', '05-cilium.conflist', false, 0o640, '/tmp/bin'],
  );
  assert.deepEqual(c.install?.plugin, { bundle: '/tmp/amesh-cni.mjs', runtime: '/tmp/node' });
  assert.deepEqual(
    [
      c.install?.entry['enable_ambient_detection_retry'],
      c.install?.entry['exclude_namespaces'],
      c.install?.entry['plugin_log_level'],
    ],
    [true, null, 'debug'],
  );
  assert.equal(loadCniAgentConfig({}, { NODE_NAME: 'n', CNI_ENABLE_INSTALL: 'false' }).install, undefined);
});

test("Istio's env names set it; a flag wins over its env var", () => {
  const c = loadCniAgentConfig(
    { cniAgentRunDir: '/run/flag' },
    {
      NODE_NAME: 'n',
      CNI_AGENT_RUN_DIR: '/run/env',
      ZTUNNEL_UDS_ADDRESS: '/run/zt.sock',
      AMBIENT_DNS_CAPTURE: 'false',
      AMBIENT_IPV6: 'F',
      AMBIENT_RECONCILE_POD_RULES_ON_STARTUP: '0',
      EXCLUDE_NAMESPACES: ' a, ,b ',
      SYSTEM_NAMESPACE: 'mesh',
      POD_NAMESPACE: 'istio-system',
      AMBIENT_ENABLEMENT_SELECTOR: '- podSelector:\n    matchLabels: {mesh: "yes"}\n',
    },
  );
  assert.equal(c.runDir, '/run/flag');
  assert.equal(c.ztunnelSocket, '/run/zt.sock');
  assert.deepEqual([c.dnsCapture, c.ipv6, c.reconcilePodRulesOnStartup], [false, false, false]);
  assert.deepEqual(c.excludeNamespaces, ['a', 'b']);
  assert.deepEqual([c.systemNamespace, c.podNamespace], ['mesh', 'istio-system']);
  assert.equal(c.enablementSelectors.selects({ mesh: 'yes' }, {}), true);
  assert.equal(c.enablementSelectors.selects({ 'istio.io/dataplane-mode': 'ambient' }, {}), false);
});

test('a bad value is AMESH_ERR_CONFIG naming the variable', () => {
  for (const [env, name] of [
    [{}, 'NODE_NAME'],
    [{ NODE_NAME: 'n', AMBIENT_DNS_CAPTURE: 'yes' }, 'AMBIENT_DNS_CAPTURE'],
    [{ NODE_NAME: 'n', CNI_AGENT_RUN_DIR: 'relative' }, '--cni-agent-run-dir'],
    [
      { NODE_NAME: 'n', AMBIENT_ENABLEMENT_SELECTOR: '[{podSelector: {matchExpressions: [{key: k, operator: Is}]}}]' },
      'AMBIENT_ENABLEMENT_SELECTOR',
    ],
    [{ NODE_NAME: 'n', AMBIENT_ENABLEMENT_SELECTOR: '{' }, 'AMBIENT_ENABLEMENT_SELECTOR'],
    [{ NODE_NAME: 'n', HOST_PROBE_SNAT_IP: 'fd00::1' }, 'HOST_PROBE_SNAT_IP'],
    [{ NODE_NAME: 'n', AMBIENT_ENABLED: 'false' }, 'AMBIENT_ENABLED'],
    [{ NODE_NAME: 'n', ISTIO_OWNED_CNI_CONFIG: 'true' }, 'ISTIO_OWNED_CNI_CONFIG'],
    [{ NODE_NAME: 'n', MOUNTED_CNI_NET_DIR: 'net.d' }, 'MOUNTED_CNI_NET_DIR'],
    [{ NODE_NAME: 'n', HOST_CNI_BIN_DIR: 'bin' }, 'HOST_CNI_BIN_DIR'],
    [{ NODE_NAME: 'n', CNI_CONF_NAME: '../10-x.conflist' }, 'CNI_CONF_NAME'],
    [{ NODE_NAME: 'n', CHAINED_CNI_PLUGIN: 'yes' }, 'CHAINED_CNI_PLUGIN'],
  ] as const) {
    assert.throws(
      () => loadCniAgentConfig({}, env),
      (e: unknown) => isMeshError(e, 'AMESH_ERR_CONFIG') && e.message.includes(name),
      JSON.stringify(env),
    );
  }
});

test('EXCLUDE_NAMESPACES drops blanks, as Istio SplitExcludeNamespaces', () => {
  assert.deepEqual(splitExcludeNamespaces(''), []);
  assert.deepEqual(splitExcludeNamespaces(',kube-system,,x,'), ['kube-system', 'x']);
});
