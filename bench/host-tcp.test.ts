import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { hostTcp } from './host-tcp.js';
import { netnsSkip, withNetns } from '../test/helpers/netns.js';

test('hostTcp: reports the congestion control and qdisc the kernel gives new sockets, as /proc/sys has them', (t) => {
  let expected: [string, string];
  try {
    expected = ['net/ipv4/tcp_congestion_control', 'net/core/default_qdisc'].map((f) =>
      readFileSync(`/proc/sys/${f}`, 'utf8').trim(),
    ) as [string, string];
  } catch {
    t.skip('no /proc/sys/net/ipv4/tcp_congestion_control or net/core/default_qdisc on this host (not Linux)');
    return;
  }
  const tcp = hostTcp();
  assert.deepEqual([tcp.congestionControl, tcp.defaultQdisc], expected);
  assert.ok(Object.isFrozen(tcp));
});

test(
  "hostTcp: in a network namespace with its own congestion control, reports that namespace's, not the host's",
  { skip: netnsSkip() },
  async () => {
    const other = hostTcp().congestionControl === 'reno' ? 'cubic' : 'reno';
    await withNetns(1, async (ns) => {
      await ns.exec('sysctl', ['-qw', `net.ipv4.tcp_congestion_control=${other}`]);
      const script = `import { hostTcp } from ${JSON.stringify(new URL('./host-tcp.js', import.meta.url).href)}; process.stdout.write(hostTcp().congestionControl);`;
      const out = await ns.exec(process.execPath, [...process.execArgv, '--input-type=module', '-e', script]);
      assert.equal(out, other);
    });
  },
);
