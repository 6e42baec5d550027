import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isMeshError } from '../lib/errors.js';
import { CniRuntime, loadNetworkConfig, parseNetworkConfigList } from './cni-runtime.js';

let dir: string;
/** A stand-in plugin that logs its command and the prevResult it was given, and answers with a result naming itself. */
const recorder = (name: string): string => `#!/bin/sh
input=$(cat)
echo "$CNI_COMMAND ${name} $(printf '%s' "$input" | grep -o '"prevResult":{[^}]*}' || echo none)" >> "$(dirname "$0")/calls.log"
[ "$CNI_COMMAND" = ADD ] && printf '{"cniVersion":"1.0.0","interfaces":[{"name":"${name}"}]}'
exit 0
`;
const FAILING = `#!/bin/sh
cat >/dev/null
printf '{"cniVersion":"1.0.0","code":7,"msg":"invalid network config","details":"bridge name missing"}'
exit 1
`;

before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'amesh-cni-runtime-'));
  for (const [name, text] of [
    ['first', recorder('first')],
    ['second', recorder('second')],
    ['failing', FAILING],
  ] as const) {
    await writeFile(path.join(dir, name), text);
    await chmod(path.join(dir, name), 0o755);
  }
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const AT = {
  containerId: 'c1',
  netns: '/run/netns/none',
  ifName: 'eth0',
  args: { K8S_POD_NAMESPACE: 'ns', K8S_POD_NAME: 'p' },
};
const list = (...types: string[]) =>
  parseNetworkConfigList(
    JSON.stringify({ cniVersion: '1.0.0', name: 'k8s-pod-network', plugins: types.map((type) => ({ type })) }),
    'test',
  );

test('CNI chain: ADD passes each result on as prevResult; DEL runs in reverse with the cached result', async () => {
  const rt = new CniRuntime({ pluginDirs: [dir], cacheDir: path.join(dir, 'cache') });
  const result = await rt.add(list('first', 'second'), AT);
  assert.deepEqual(result, { cniVersion: '1.0.0', interfaces: [{ name: 'second' }] });
  await rt.del(list('first', 'second'), AT);
  const calls = (await readFile(path.join(dir, 'calls.log'), 'utf8')).trim().split('\n');
  assert.deepEqual(calls, [
    'ADD first none',
    'ADD second "prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"first"}',
    'DEL second "prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"second"}',
    'DEL first "prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"second"}',
  ]);
});

test("CNI chain: a plugin's error result fails the ADD with its code, message and details", async () => {
  const rt = new CniRuntime({ pluginDirs: [dir], cacheDir: path.join(dir, 'cache') });
  await assert.rejects(
    rt.add(list('failing'), AT),
    (e: unknown) =>
      isMeshError(e, 'UP_ERR_CNI') &&
      /failing ADD failed with code 7: invalid network config \(bridge name missing\)/.test(e.message),
  );
  await assert.rejects(
    rt.add(list('absent'), AT),
    (e: unknown) => isMeshError(e, 'UP_ERR_CNI') && /"absent" not found/.test(e.message),
  );
});

test('CNI network configuration lists are refused with the field that is wrong', () => {
  const bad = (text: string, field: RegExp): void =>
    assert.throws(
      () => parseNetworkConfigList(text, 'net.conflist'),
      (e: unknown) => isMeshError(e, 'UP_ERR_CNI') && field.test(e.message),
    );
  bad('{', /net\.conflist: not JSON/);
  bad('{"name":"n","plugins":[{"type":"bridge"}]}', /cniVersion is required/);
  bad('{"cniVersion":"1.0.0","name":"n","plugins":[]}', /plugins must be a non-empty list/);
  bad('{"cniVersion":"1.0.0","name":"n","plugins":[{"ipam":{}}]}', /plugins\[0\]\.type is required/);
});

test("the network configuration is the conf dir's first file by name, read anew each time; a .conf is a list of its one plugin; none is containerd's not-initialized error; the plugins' paths resolve on the node", async () => {
  const conf = await mkdtemp(path.join(tmpdir(), 'amesh-cni-conf-'));
  try {
    await assert.rejects(loadNetworkConfig(conf), {
      message: /no network config found in .*: cni plugin not initialized/,
    });
    await writeFile(
      path.join(conf, '20-other.conflist'),
      JSON.stringify({ cniVersion: '1.0.0', name: 'other', plugins: [{ type: 'ptp' }] }),
    );
    await writeFile(path.join(conf, 'README'), 'not a config');
    assert.equal((await loadNetworkConfig(conf)).name, 'other');
    await writeFile(
      path.join(conf, '10-bridge.conf'),
      JSON.stringify({ cniVersion: '0.4.0', name: 'br', type: 'bridge', bridge: 'cni0' }),
    );
    assert.deepEqual(await loadNetworkConfig(conf), {
      cniVersion: '0.4.0',
      name: 'br',
      plugins: [{ cniVersion: '0.4.0', name: 'br', type: 'bridge', bridge: 'cni0' }],
    });
    // The paths a chained plugin is given (Istio's cni_agent_run_dir) are where this node has them.
    await writeFile(
      path.join(conf, '05-chained.conflist'),
      JSON.stringify({
        cniVersion: '1.0.0',
        name: 'chained',
        plugins: [{ type: 'amesh-cni', cni_agent_run_dir: '/var/run/istio-cni', list: ['/etc/cni/x', 'rel'] }],
      }),
    );
    const node = (p: string): string => (p.startsWith('/var/run/') ? `/nodes/n1/root${p.slice(4)}` : p);
    assert.deepEqual((await loadNetworkConfig(conf, node)).plugins, [
      { type: 'amesh-cni', cni_agent_run_dir: '/nodes/n1/root/run/istio-cni', list: ['/etc/cni/x', 'rel'] },
    ]);
  } finally {
    await rm(conf, { recursive: true, force: true });
  }
});
