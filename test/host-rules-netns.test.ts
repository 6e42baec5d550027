import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { HostProbeRules, PROBE_IPSET_V4, PROBE_IPSET_V6 } from '../src/cni/agent/host-rules.js';
import { PodRules } from '../src/cni/agent/pod-rules.js';
import { listenInNetns, tcpSocketInNetns } from '../src/native/native.js';
import { netnsSkip, withNetns } from './helpers/netns.js';
import { savedRules } from './helpers/iptables-save.js';
import { readGolden } from './helpers/pod-rules-cases.js';

const skip = netnsSkip();

const byIp = (a: { ip: string }, b: { ip: string }): number => a.ip.localeCompare(b.ip);

test(
  "host probe rules: iptables-save and ip6tables-save show Istio's hostprobe rules, once even when created again, and the hash:ip sets with comments",
  { skip },
  () =>
    withNetns(1, async (ns) => {
      const rules = new HostProbeRules(undefined, ns.path);
      await rules.create();
      await rules.create();
      assert.equal(await savedRules(ns, 4), readGolden('host-rules/hostprobe.iptables-save'));
      assert.equal(await savedRules(ns, 6), readGolden('host-rules/hostprobe.ip6tables-save'));
      for (const [set, family] of [
        [PROBE_IPSET_V4, 'inet'],
        [PROBE_IPSET_V6, 'inet6'],
      ]) {
        const list = await ns.exec('ipset', ['list', set!]);
        assert.match(list, /^Type: hash:ip$/m);
        assert.match(list, new RegExp(`^Header: family ${family} .*comment`, 'm'));
      }
    }),
);

test(
  "probe set entries: a pod's IPs are added with its UID, replaced, taken over by another UID, removed by UID and pruned to the enrolled UIDs",
  { skip },
  () =>
    withNetns(1, async (ns) => {
      const rules = new HostProbeRules(undefined, ns.path);
      await rules.create();
      await rules.addPod('uid-a', ['10.92.0.5', 'FD00:92::0005']);
      await rules.addPod('uid-b', ['10.92.0.6', '::ffff:10.92.0.7']);
      assert.deepEqual((await rules.entries()).sort(byIp), [
        { ip: '10.92.0.5', uid: 'uid-a' },
        { ip: '10.92.0.6', uid: 'uid-b' },
        { ip: '10.92.0.7', uid: 'uid-b' },
        { ip: 'fd00:92::5', uid: 'uid-a' },
      ]);
      assert.match(await ns.exec('ipset', ['list', PROBE_IPSET_V6]), /^fd00:92::5 comment "uid-a"$/m);
      // The pod's IPs changed: its old ones go.
      await rules.addPod('uid-b', ['10.92.0.6']);
      // A new pod got uid-a's old IP before uid-a's removal ran: the address is the new pod's, and stays.
      await rules.addPod('uid-c', ['10.92.0.5']);
      assert.deepEqual(await rules.removePod('uid-a'), [{ ip: 'fd00:92::5', uid: 'uid-a' }]);
      assert.deepEqual((await rules.entries()).sort(byIp), [
        { ip: '10.92.0.5', uid: 'uid-c' },
        { ip: '10.92.0.6', uid: 'uid-b' },
      ]);
      // An agent restart keeps the sets' entries; the ones of pods no longer enrolled are pruned.
      await new HostProbeRules(undefined, ns.path).create();
      assert.deepEqual(await rules.prune(new Set(['uid-c'])), [{ ip: '10.92.0.6', uid: 'uid-b' }]);
      assert.deepEqual(await rules.entries(), [{ ip: '10.92.0.5', uid: 'uid-c' }]);
      assert.deepEqual(await rules.removePod('uid-gone'), []);
    }),
);

test(
  'agent shutdown: deleting the host rules leaves iptables-save as before and no ipsets, and deleting again is harmless',
  { skip },
  () =>
    withNetns(1, async (ns) => {
      await ns.exec('iptables', ['-t', 'nat', '-A', 'POSTROUTING', '-p', 'udp', '-j', 'ACCEPT']);
      const before = [await savedRules(ns, 4), await savedRules(ns, 6)];
      const rules = new HostProbeRules(undefined, ns.path);
      await rules.create();
      await rules.addPod('uid-a', ['10.92.0.5']);
      await rules.delete();
      assert.deepEqual([await savedRules(ns, 4), await savedRules(ns, 6)], before);
      assert.equal((await ns.exec('ipset', ['list', '-name'])).trim(), '');
      await rules.delete();
    }),
);

/** Resolves with the source address of the next connection `server` accepts. */
async function sourceSeenByApp(server: net.Server): Promise<string> {
  const [socket] = (await once(server, 'connection')) as [net.Socket];
  const source = socket.remoteAddress!;
  socket.destroy();
  return source;
}

/** Connects from a socket made in `netns` and resolves once connected, or rejects with the connect error. */
async function connectFrom(netns: string, host: string, port: number): Promise<void> {
  const socket = tcpSocketInNetns(netns, 4);
  socket.connect({ host, port });
  try {
    await once(socket, 'connect');
  } finally {
    socket.destroy();
  }
}

test(
  'kubelet probe path: a node-local connection to an enrolled pod is SNATed to 169.254.7.127 and reaches the app uncaptured; out of the set it is captured',
  { skip },
  () =>
    withNetns(2, async (node, pod) => {
      await node.exec('ip', ['link', 'add', 'veth-node', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', pod.name]);
      await node.exec('ip', ['addr', 'add', '10.92.1.1/24', 'dev', 'veth-node']);
      await node.exec('ip', ['link', 'set', 'veth-node', 'up']);
      await pod.exec('ip', ['addr', 'add', '10.92.1.2/24', 'dev', 'eth0']);
      await pod.exec('ip', ['link', 'set', 'eth0', 'up']);
      await pod.exec('ip', ['route', 'add', 'default', 'via', '10.92.1.1']);
      const hostRules = new HostProbeRules(undefined, node.path);
      await hostRules.create();
      await new PodRules().apply(pod.path);
      const app = net.createServer();
      await listenInNetns(app, pod.path, { host: '10.92.1.2', port: 8080 });
      try {
        await hostRules.addPod('uid-p', ['10.92.1.2']);
        const seen = sourceSeenByApp(app);
        await connectFrom(node.path, '10.92.1.2', 8080);
        assert.equal(await seen, '169.254.7.127');
        // Without the SNAT, the pod's rules send the connection to ztunnel's 15006, where nothing listens here.
        await hostRules.removePod('uid-p');
        await assert.rejects(connectFrom(node.path, '10.92.1.2', 8080), { code: 'ECONNREFUSED' });
      } finally {
        app.close();
      }
    }),
);

test(
  "overlapping calls on one pod are serialised: two addPod at once end with the later one's IPs, an addPod overlapping removePod leaves nothing",
  { skip },
  () =>
    withNetns(1, async (ns) => {
      const rules = new HostProbeRules(undefined, ns.path);
      await rules.create();
      await Promise.all([rules.addPod('uid-a', ['10.97.0.1']), rules.addPod('uid-a', ['10.97.0.2'])]);
      assert.deepEqual(await rules.entries(), [{ ip: '10.97.0.2', uid: 'uid-a' }]);
      await Promise.all([
        rules.addPod('uid-b', ['10.97.0.3']),
        rules.removePod('uid-b'),
        rules.prune(new Set(['uid-a'])),
      ]);
      assert.deepEqual(await rules.entries(), [{ ip: '10.97.0.2', uid: 'uid-a' }]);
    }),
);
