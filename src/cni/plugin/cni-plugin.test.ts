import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CapturedLogs } from '../../../test/helpers/captured-logs.js';
import { BRIDGE_RESULT, pluginNetworkConfig } from '../../../test/helpers/cni-network-config.js';
import { MeshError } from '../../lib/errors.js';
import type { PodFacts } from './capture-decision.js';
import type { CniPluginAddEvent } from './cni-plugin-add-event.js';
import type { AddDeps } from './cmd-add.js';
import { runCniPlugin } from './cni-plugin.js';

const ENV = {
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: 'c0ffee',
  CNI_NETNS: '/var/run/netns/cni-1234',
  CNI_IFNAME: 'eth0',
  CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-0',
};
const ENROLLED: PodFacts = {
  labels: {},
  annotations: {},
  hostNetwork: false,
  namespaceLabels: { 'istio.io/dataplane-mode': 'ambient' },
};

/** Dependencies that record what the plugin contacted; `pod` and `agent` decide the answers. */
function fakes(o: { pod?: (attempt: number) => PodFacts; agent?: () => void; ownNetns?: boolean } = {}) {
  const logs = new CapturedLogs('amesh-cni');
  const lookups: string[] = [];
  const posts: { socket: string; event: CniPluginAddEvent }[] = [];
  const deps: AddDeps = {
    readPod: (kubeconfig, namespace, name) => {
      lookups.push(`${kubeconfig} ${namespace}/${name}`);
      return Promise.resolve().then(() => (o.pod ?? (() => ENROLLED))(lookups.length));
    },
    postAddEvent: (socket, event) => {
      posts.push({ socket, event });
      return Promise.resolve().then(() => o.agent?.());
    },
    isOwnNetns: () => o.ownNetns ?? false,
    retryDelayMs: 0,
    log: logs.control.scope('cni-plugin'),
    setLogLevel: (spec) => logs.control.apply(spec),
  };
  return { deps, lookups, posts, logs };
}

/** The error result's CNI code. */
const codeOf = (stdout: string): unknown => (JSON.parse(stdout) as { code?: unknown }).code;

const run = (env: Record<string, string>, stdin: unknown, deps: AddDeps) =>
  runCniPlugin(env, () => Promise.resolve(typeof stdin === 'string' ? stdin : JSON.stringify(stdin)), deps);

test('ADD of a selected pod looks it up with the agent kubeconfig, posts the event to pluginevent.sock and prints prevResult', async () => {
  const f = fakes();
  const out = await run(ENV, pluginNetworkConfig('/var/run/istio-cni'), f.deps);
  assert.deepEqual(out, { stdout: JSON.stringify(BRIDGE_RESULT), exitCode: 0 });
  assert.deepEqual(f.lookups, ['/var/run/istio-cni/istio-cni-kubeconfig shop/web-0']);
  assert.equal(f.posts.length, 1);
  assert.equal(f.posts[0]!.socket, '/var/run/istio-cni/pluginevent.sock');
  assert.deepEqual(f.posts[0]!.event, {
    Netns: '/var/run/netns/cni-1234',
    PodName: 'web-0',
    PodNamespace: 'shop',
    IPs: [{ Interface: 2, Address: { IP: '10.244.1.5', Mask: '////AA==' }, Gateway: '10.244.1.1' }],
  });
});

test('ADD of a pod in an excluded namespace contacts neither the API nor the agent and prints prevResult', async () => {
  const f = fakes();
  const out = await run(
    { ...ENV, CNI_ARGS: 'K8S_POD_NAMESPACE=kube-system;K8S_POD_NAME=coredns-0' },
    pluginNetworkConfig('/r'),
    f.deps,
  );
  assert.deepEqual(out, { stdout: JSON.stringify(BRIDGE_RESULT), exitCode: 0 });
  assert.deepEqual([f.lookups, f.posts], [[], []]);
  await f.logs.waitFor('the skip is logged with its reason', (l) => l['reason'] === 'excluded namespace');
});

test('ADD of a pod the selectors do not select is not posted', async () => {
  const f = fakes({ pod: () => ({ ...ENROLLED, namespaceLabels: {} }) });
  assert.equal((await run(ENV, pluginNetworkConfig('/r'), f.deps)).exitCode, 0);
  assert.equal(f.lookups.length, 1);
  assert.equal(f.posts.length, 0);
});

test('a failed capture fails the ADD (fail closed) with the agent error as a CNI error result', async () => {
  const f = fakes({
    agent: () => {
      throw new MeshError(
        'CNI_ERR_CAPTURE_FAILED',
        'the node agent at /r/pluginevent.sock did not capture pod shop/web-0: 500 no ztunnel connection',
      );
    },
  });
  const out = await run(ENV, pluginNetworkConfig('/r'), f.deps);
  assert.equal(out.exitCode, 1);
  assert.deepEqual(JSON.parse(out.stdout), {
    cniVersion: '1.0.0',
    code: 100,
    msg: 'the node agent could not capture the pod',
    details:
      'CNI_ERR_CAPTURE_FAILED: the node agent at /r/pluginevent.sock did not capture pod shop/web-0: 500 no ztunnel connection',
  });
  await f.logs.waitFor('the failure is logged on stderr too', (l) => l['level'] === 'error' && l['code'] === 100);
});

test('the pod lookup is tried twice by default and 31 times with enable_ambient_detection_retry, then the ADD fails with code 11', async () => {
  const down = () => {
    throw new MeshError('CNI_ERR_KUBE_API', 'cannot read pod shop/web-0: connect ECONNREFUSED');
  };
  const once = fakes({ pod: down });
  const out = await run(ENV, pluginNetworkConfig('/r'), once.deps);
  assert.equal(once.lookups.length, 2);
  assert.equal(codeOf(out.stdout), 11);
  const retried = fakes({ pod: down });
  assert.equal(
    (await run(ENV, pluginNetworkConfig('/r', { enable_ambient_detection_retry: true }), retried.deps)).exitCode,
    1,
  );
  assert.equal(retried.lookups.length, 31);
  assert.equal(retried.posts.length, 0);
  const recovers = fakes({ pod: (attempt) => (attempt < 2 ? down() : ENROLLED) });
  assert.equal(
    (await run(ENV, pluginNetworkConfig('/r'), recovers.deps)).exitCode,
    0,
    'a lookup that succeeds on the retry captures',
  );
  assert.equal(recovers.posts.length, 1);
});

test("CNI_NETNS naming the plugin's own network namespace is refused before anything is contacted", async () => {
  const f = fakes({ ownNetns: true });
  const out = await run(ENV, pluginNetworkConfig('/r'), f.deps);
  assert.equal(codeOf(out.stdout), 8);
  assert.deepEqual([f.lookups, f.posts], [[], []]);
});

test('DEL, CHECK, GC and STATUS succeed with no output and contact nothing, whatever the plugin fields hold', async () => {
  const f = fakes();
  const broken = pluginNetworkConfig('relative', { ambient_enabled: 'yes', cniVersion: '1.1.0' });
  for (const [env, stdin] of [
    [{ CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c0ffee', CNI_IFNAME: 'eth0' }, broken],
    [
      { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c0ffee', CNI_IFNAME: 'eth0' },
      { ...broken, prevResult: undefined },
    ],
    [{ ...ENV, CNI_COMMAND: 'CHECK' }, broken],
    [{ CNI_COMMAND: 'GC', CNI_PATH: '/opt/cni/bin' }, broken],
    [{ CNI_COMMAND: 'STATUS' }, broken],
  ] as const) {
    assert.deepEqual(await run(env, stdin, f.deps), { stdout: '', exitCode: 0 }, env.CNI_COMMAND);
  }
  assert.deepEqual([f.lookups, f.posts], [[], []]);
});

test('VERSION answers without a network config', async () => {
  const out = await run({ CNI_COMMAND: 'VERSION' }, '', fakes().deps);
  assert.deepEqual(out, {
    stdout: '{"cniVersion":"1.1.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}',
    exitCode: 0,
  });
});

test('every failure is a CNI error result {cniVersion, code, msg, details} with the spec code, labelled with the config version once known', async () => {
  const cases: [Record<string, string>, unknown, string, number, RegExp][] = [
    [{}, pluginNetworkConfig('/r'), '1.1.0', 4, /^CNI_ERR_ENV: required environment variable CNI_COMMAND is missing/],
    [{ ...ENV, CNI_ARGS: 'FOO=1' }, pluginNetworkConfig('/r'), '1.0.0', 4, /^CNI_ERR_ENV: CNI_ARGS has unknown keys/],
    [ENV, '{"cniVersion": "1.0.0", "name": ', '1.1.0', 6, /^CNI_ERR_DECODE: the network config on stdin is not JSON/],
    [
      ENV,
      pluginNetworkConfig('/r', { cniVersion: '0.2.0' }),
      '0.2.0',
      1,
      /^CNI_ERR_VERSION: the network config's cniVersion "0\.2\.0" is not supported/,
    ],
    [
      { ...ENV, CNI_COMMAND: 'CHECK' },
      pluginNetworkConfig('/r', { cniVersion: '0.3.1' }),
      '0.3.1',
      1,
      /does not allow CHECK/,
    ],
    [ENV, pluginNetworkConfig('/r', { name: '' }), '1.0.0', 7, /^CNI_ERR_CONFIG: the network config has no "name"/],
    [
      ENV,
      pluginNetworkConfig('/r', { exclude_namespaces: 'kube-system' }),
      '1.0.0',
      7,
      /^CNI_ERR_CONFIG: "exclude_namespaces" must be a list/,
    ],
  ];
  for (const [env, stdin, cniVersion, code, details] of cases) {
    const out = await run(env, stdin, fakes().deps);
    assert.equal(out.exitCode, 1);
    const r = JSON.parse(out.stdout) as Record<string, unknown>;
    assert.deepEqual(Object.keys(r), ['cniVersion', 'code', 'msg', 'details']);
    assert.deepEqual([r['cniVersion'], r['code']], [cniVersion, code], String(details));
    assert.match(String(r['details']), details);
  }
});

test('an unforeseen failure is code 999, not an exception; an unreadable stdin is code 5', async () => {
  const f = fakes({
    pod: () => {
      throw new TypeError('boom');
    },
  });
  const out = await run(ENV, pluginNetworkConfig('/r'), f.deps);
  assert.deepEqual(JSON.parse(out.stdout), {
    cniVersion: '1.0.0',
    code: 999,
    msg: 'internal error in amesh-cni',
    details: 'boom',
  });
  const unreadable = await runCniPlugin(ENV, () => Promise.reject(new Error('EIO: i/o error, read')), f.deps);
  assert.equal(codeOf(unreadable.stdout), 5);
});
