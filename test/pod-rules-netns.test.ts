import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, openSync } from 'node:fs';
import { isMeshError } from '../src/lib/errors.js';
import { DEFAULT_POD_RULES_CONFIG, PodRules } from '../src/cni/agent/pod-rules.js';
import { restoreRules } from '../src/cni/agent/iptables-rules.js';
import { netnsSkip, withNetns, type TestNetns } from './helpers/netns.js';
import { savedRules } from './helpers/iptables-save.js';
import { POD_RULES_CASES, readGolden } from './helpers/pod-rules-cases.js';

const skip = netnsSkip();

/** The ip rules and every routing table of both families: what the rules' netlink part touches, and more. */
async function routing(ns: TestNetns): Promise<string> {
  // One `ip` at a time: under load, concurrent `ip netns exec` runs in one namespace were seen to return partial output.
  const out: string[] = [];
  for (const a of [
    ['-4', 'rule'],
    ['-6', 'rule'],
    ['-4', 'route', 'show', 'table', 'all'],
    ['-6', 'route', 'show', 'table', 'all'],
  ])
    out.push(await ns.exec('ip', a));
  return out.join('--\n');
}

async function assertGolden(ns: TestNetns, name: string): Promise<void> {
  assert.equal(await savedRules(ns, 4), readGolden(`pod-rules/${name}.iptables-save`), 'iptables-save');
  assert.equal(await savedRules(ns, 6), readGolden(`pod-rules/${name}.ip6tables-save`), 'ip6tables-save');
}

for (const c of POD_RULES_CASES) {
  test(
    `enrolled pod netns: iptables-save and ip6tables-save show Istio's ${c.name} rules, with the fwmark ip rule and table 100's local routes`,
    { skip },
    () =>
      withNetns(1, async (ns) => {
        await new PodRules(c.config).apply(ns.path, c.overrides);
        await assertGolden(ns, c.name);
        for (const family of ['-4', '-6']) {
          assert.match(await ns.exec('ip', [family, 'rule']), /^32764:\s+from all fwmark 0x111\/0xfff lookup 100\s*$/m);
        }
        assert.match(
          await ns.exec('ip', ['-4', 'route', 'show', 'table', '100']),
          /^local default dev lo scope host\s*$/m,
        );
        assert.match(await ns.exec('ip', ['-6', 'route', 'show', 'table', '100']), /^local default dev lo /m);
      }),
  );
}

test(
  "un-enroll: removing the rules leaves iptables-save, ip rule and table 100 as they were, others' rules and routes included",
  { skip },
  () =>
    withNetns(1, async (ns) => {
      await ns.exec('iptables', ['-t', 'nat', '-A', 'OUTPUT', '-p', 'tcp', '--dport', '9', '-j', 'ACCEPT']);
      await ns.exec('ip6tables', ['-t', 'mangle', '-A', 'PREROUTING', '-p', 'tcp', '--dport', '9', '-j', 'ACCEPT']);
      await ns.exec('ip', ['route', 'add', 'blackhole', '192.0.2.0/24', 'table', '100']);
      await ns.exec('ip', ['rule', 'add', 'fwmark', '0x7', 'pref', '32000', 'lookup', '100']);
      const before = [await savedRules(ns, 4), await savedRules(ns, 6), await routing(ns)];
      const rules = new PodRules();
      await rules.apply(ns.path, { ...POD_RULES_CASES[0]!.overrides });
      assert.notDeepEqual([await savedRules(ns, 4), await savedRules(ns, 6), await routing(ns)], before);
      await rules.remove(ns.path);
      assert.deepEqual([await savedRules(ns, 4), await savedRules(ns, 6), await routing(ns)], before);
      await rules.remove(ns.path);
      assert.deepEqual(
        [await savedRules(ns, 4), await savedRules(ns, 6), await routing(ns)],
        before,
        'removing twice is harmless',
      );
    }),
);

test(
  'agent restart reconcile: re-applying over leftovers (a stray ISTIO_ chain and jump, a lost rule, other overrides) ends with exactly the golden rules',
  { skip },
  () =>
    withNetns(1, async (ns) => {
      const rules = new PodRules();
      const ingress = POD_RULES_CASES.find((c) => c.name === 'ingress_and_virtual_interfaces')!;
      await rules.apply(ns.path, ingress.overrides);
      await ns.exec('iptables', ['-t', 'nat', '-N', 'ISTIO_TEST']);
      await ns.exec('iptables', ['-t', 'nat', '-A', 'OUTPUT', '-j', 'ISTIO_TEST']);
      await ns.exec('iptables', ['-t', 'nat', '-A', 'ISTIO_TEST', '-p', 'tcp', '--dport', '123', '-j', 'ACCEPT']);
      await ns.exec('iptables', ['-t', 'mangle', '-D', 'OUTPUT', '-j', 'ISTIO_OUTPUT']);
      const routes = await routing(ns);
      await rules.apply(ns.path);
      await assertGolden(ns, 'default');
      assert.equal(await routing(ns), routes, 'one ip rule and one route per family, as after the first apply');
    }),
);

test('rules apply and go through a netns fd (as cached from the CNI netns path) as through its path', { skip }, () =>
  withNetns(1, async (ns) => {
    const fd = openSync(ns.path, 'r');
    try {
      const rules = new PodRules();
      await rules.apply(fd);
      await assertGolden(ns, 'default');
      await rules.remove(fd);
      assert.equal(await savedRules(ns, 4), '');
    } finally {
      closeSync(fd);
    }
  }),
);

test(
  'a pod whose lo has IPv6 disabled gets the IPv6 ip rule and ip6tables rules but no IPv6 local route, as Istio does',
  { skip },
  () =>
    withNetns(1, async (ns) => {
      await ns.exec('sh', ['-c', 'echo 1 > /proc/sys/net/ipv6/conf/lo/disable_ipv6']);
      await new PodRules().apply(ns.path);
      await assertGolden(ns, 'default');
      assert.equal((await ns.exec('ip', ['-6', 'route', 'show', 'table', '100'])).trim(), '');
      assert.match(await ns.exec('ip', ['-6', 'rule']), /fwmark 0x111\/0xfff lookup 100/);
    }),
);

test('AMBIENT_IPV6=false: no ip6tables rules and no IPv6 ip rule', { skip }, () =>
  withNetns(1, async (ns) => {
    await new PodRules({ ...DEFAULT_POD_RULES_CONFIG, ipv6: false }).apply(ns.path);
    assert.equal(await savedRules(ns, 4), readGolden('pod-rules/default.iptables-save'));
    assert.equal(await savedRules(ns, 6), '');
    assert.doesNotMatch(await ns.exec('ip', ['-6', 'rule']), /fwmark/);
  }),
);

test(
  "a failing iptables-restore is AGENT_ERR_POD_RULES naming the namespace and quoting iptables's stderr",
  { skip },
  () =>
    withNetns(1, async (ns) => {
      await assert.rejects(
        restoreRules('AGENT_ERR_POD_RULES', ns.path, 4, '* nat\n-A NO_SUCH_CHAIN -j ACCEPT\nCOMMIT\n'),
        (e) => {
          assert.ok(isMeshError(e, 'AGENT_ERR_POD_RULES'));
          assert.ok(e.message.includes(ns.path), e.message);
          assert.match(e.message, /iptables-restore.*exited \d+: .*line 2/s);
          return true;
        },
      );
    }),
);

test('rules for a namespace that does not exist fail with AGENT_ERR_POD_RULES naming it', { skip }, async () => {
  await assert.rejects(
    new PodRules().apply('/var/run/netns/amesh-t-missing'),
    (e) => isMeshError(e, 'AGENT_ERR_POD_RULES') && e.message.includes('/var/run/netns/amesh-t-missing'),
  );
});

test('a probe SNAT address that is not an IP is refused before anything is written', () => {
  assert.throws(
    () => new PodRules({ ...DEFAULT_POD_RULES_CONFIG, hostProbeSnatIp: '169.254.7.127 -j DROP' }),
    (e) => isMeshError(e, 'AGENT_ERR_POD_RULES'),
  );
});

test(
  "overlapping apply and remove on one pod (named by its path and by an fd) run in call order: the last call's rules are what stays",
  { skip },
  () =>
    withNetns(1, async (ns) => {
      const [first, last] = [POD_RULES_CASES[1]!, POD_RULES_CASES[2]!];
      const rules = new PodRules(last.config);
      const fd = openSync(ns.path, 'r');
      try {
        for (let round = 0; round < 3; round++) {
          await Promise.all([
            rules.apply(ns.path, first.overrides),
            rules.remove(fd),
            rules.apply(fd, first.overrides),
            rules.apply(ns.path, last.overrides),
          ]);
          assert.equal(await savedRules(ns, 4), readGolden(`pod-rules/${last.name}.iptables-save`), `round ${round}`);
        }
      } finally {
        closeSync(fd);
      }
    }),
);
