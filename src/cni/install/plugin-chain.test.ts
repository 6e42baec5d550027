import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../../lib/errors.js';
import { PLUGIN_TYPE, chainPlugin, chainsEntry, unchainPlugin } from './plugin-chain.js';
import { parseNetworkConfigFile } from './network-config-file.js';

const ENTRY = Object.freeze({
  cni_agent_run_dir: '/var/run/istio-cni',
  name: PLUGIN_TYPE,
  type: PLUGIN_TYPE,
  exclude_namespaces: ['kube-system'],
});

/** kind's primary config: ptp with host-local, then portmap, as kindnet writes it (tabs, its own key order). */
const KIND_PTP = `{
\t"cniVersion": "0.3.1",
\t"name": "kindnet",
\t"plugins": [
\t{
\t\t"type": "ptp",
\t\t"ipMasq": false,
\t\t"ipam": {
\t\t\t"type": "host-local",
\t\t\t"dataDir": "/run/cni-ipam-state",
\t\t\t"routes": [{ "dst": "0.0.0.0/0" }],
\t\t\t"ranges": [[{ "subnet": "10.244.0.0/24" }]]
\t\t},
\t\t"mtu": 1500
\t},
\t{
\t\t"type": "portmap",
\t\t"capabilities": { "portMappings": true }
\t}
\t]
}
`;

/** A bridge list on one line, as `amesh up` writes its nodes' (JSON.stringify). */
const BRIDGE_ONE_LINE =
  '{"cniVersion":"1.0.0","name":"amesh","plugins":[{"type":"bridge","bridge":"cni0","isGateway":true,"ipam":{"type":"host-local","ranges":[[{"subnet":"10.1.0.0/24"}]]}}]}';

const pluginsOf = (text: string, file = '10-x.conflist'): Record<string, unknown>[] => {
  const parsed = parseNetworkConfigFile(text, file);
  assert.equal(parsed.kind, 'list');
  return parsed.kind === 'list' ? parsed.plugins : [];
};

test('chaining appends our entry after the primary ptp list, in its layout, and leaves every other byte as it was', () => {
  const chained = chainPlugin(KIND_PTP, '10-kindnet.conflist', ENTRY);
  assert.deepEqual(
    pluginsOf(chained).map((p) => p['type']),
    ['ptp', 'portmap', PLUGIN_TYPE],
  );
  // After the last element, with the list's separator (",\n\t") and a tab per level, as the elements before it.
  const entryText = JSON.stringify(ENTRY, null, '\t').replaceAll('\n', '\n\t');
  assert.equal(chained, KIND_PTP.replace('\t}\n\t]\n}\n', `\t},\n\t${entryText}\n\t]\n}\n`));
  assert.equal(unchainPlugin(chained, '10-kindnet.conflist'), KIND_PTP, 'removal gives back the file as it was');
});

test('a one-line bridge list gets a one-line entry, and loses it again byte for byte', () => {
  const chained = chainPlugin(BRIDGE_ONE_LINE, '10-amesh.conflist', ENTRY);
  assert.equal(chained, `${BRIDGE_ONE_LINE.slice(0, -2)},${JSON.stringify(ENTRY)}]}`);
  assert.equal(unchainPlugin(chained, '10-amesh.conflist'), BRIDGE_ONE_LINE);
});

test('a list that already chains our entry as wanted is returned unchanged, even with another plugin after it', () => {
  const chained = chainPlugin(BRIDGE_ONE_LINE, '10-amesh.conflist', ENTRY);
  assert.equal(chainPlugin(chained, '10-amesh.conflist', ENTRY), chained);
  const followed = chained.replace(/\]\}$/, ',{"type":"bandwidth"}]}');
  assert.equal(chainPlugin(followed, '10-amesh.conflist', ENTRY), followed);
  assert.equal(chainsEntry(parseNetworkConfigFile(followed, '10-amesh.conflist'), ENTRY), true);
});

test('an entry of ours that differs is taken out and the wanted one appended last, as Istio re-inserts it', () => {
  const stale = chainPlugin(BRIDGE_ONE_LINE, '10-amesh.conflist', { ...ENTRY, exclude_namespaces: null }).replace(
    /\]\}$/,
    ',{"type":"bandwidth"}]}',
  );
  assert.equal(chainsEntry(parseNetworkConfigFile(stale, '10-amesh.conflist'), ENTRY), false);
  const fixed = chainPlugin(stale, '10-amesh.conflist', ENTRY);
  assert.deepEqual(
    pluginsOf(fixed).map((p) => p['type']),
    ['bridge', 'bandwidth', PLUGIN_TYPE],
  );
  assert.deepEqual(pluginsOf(fixed)[2], ENTRY);
});

test('removal takes out our entry wherever it is, with its separator, and leaves a list without one as it is', () => {
  const first = '{"name":"n","plugins":[ {"type":"amesh-cni"} , {"type":"bridge"} ]}';
  assert.equal(unchainPlugin(first, 'x.conflist'), '{"name":"n","plugins":[ {"type":"bridge"} ]}');
  const middle = '{"name":"n","plugins":[{"type":"bridge"},{"type":"amesh-cni"},{"type":"portmap"}]}';
  assert.equal(unchainPlugin(middle, 'x.conflist'), '{"name":"n","plugins":[{"type":"bridge"},{"type":"portmap"}]}');
  assert.equal(unchainPlugin(BRIDGE_ONE_LINE, 'x.conflist'), BRIDGE_ONE_LINE);
});

test('a .conf becomes a list named k8s-pod-network at cniVersion 0.3.1 of the network (without its version) and our entry', () => {
  const conf = '{"cniVersion":"0.4.0","name":"dbnet","type":"bridge","bridge":"cni0","ipam":{"type":"host-local"}}';
  const list = chainPlugin(conf, '10-bridge.conf', ENTRY);
  assert.deepEqual(JSON.parse(list), {
    cniVersion: '0.3.1',
    name: 'k8s-pod-network',
    plugins: [{ name: 'dbnet', type: 'bridge', bridge: 'cni0', ipam: { type: 'host-local' } }, ENTRY],
  });
  assert.ok(list.endsWith('}\n'));
  assert.equal(chainsEntry(parseNetworkConfigFile(list, '10-bridge.conflist'), ENTRY), true);
});

test('strings with brackets, escaped quotes and nested lists do not confuse where the plugin list ends', () => {
  const tricky =
    '{"name":"n\\"]}","plugins":[{"type":"bridge","args":{"x":"]},\\\\"},"ranges":[[{"a":[1,2,{"b":"["}]}]]}],"plugins_note":"["}';
  const chained = chainPlugin(tricky, 'x.conflist', ENTRY);
  assert.deepEqual(
    pluginsOf(chained).map((p) => p['type']),
    ['bridge', PLUGIN_TYPE],
  );
  assert.equal(unchainPlugin(chained, 'x.conflist'), tricky);
});

test('a config the runtime could not load is AGENT_ERR_CNI_CONFIG naming the file and the problem, never a crash', () => {
  for (const [text, file, problem] of [
    ['{"name": "x", "plugins": [', '10-broken.conflist', /10-broken\.conflist: is not JSON/],
    ['[]', 'a.conflist', /a\.conflist: is not a JSON object/],
    ['{}', 'a.conflist', /has no "name"/],
    ['{"name":"x","plugins":[]}', 'a.conflist', /has no "plugins" list/],
    ['{"name":"x","plugins":{}}', 'a.conflist', /has no "plugins" list/],
    ['{"name":"x","plugins":[{"type":"bridge"},"ptp"]}', 'a.conflist', /plugins\[1\] has no "type"/],
    ['{"name":"x","plugins":[{"type":"bridge"}]}', 'a.conf', /has no "type"/],
  ] as const) {
    for (const [what, change] of [
      ['chain', (t: string, f: string) => chainPlugin(t, f, ENTRY)],
      ['unchain', unchainPlugin],
    ] as const)
      assert.throws(
        () => change(text, file),
        (e: unknown) => isMeshError(e, 'AGENT_ERR_CNI_CONFIG') && problem.test(e.message),
        `${what} ${text}`,
      );
  }
});
