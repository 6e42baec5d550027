import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../../lib/errors.js';
import { HostProbeRules, renderHostRules } from './host-rules.js';
import { DEFAULT_POD_RULES_CONFIG } from './pod-rules.js';
import { readGolden } from '../../../test/helpers/pod-rules-cases.js';

for (const ipv6 of [false, true]) {
  const golden = `host-rules/hostprobe${ipv6 ? '_ipv6' : ''}.golden`;
  test(`host probe iptables-restore input is byte for byte Istio's ${golden}`, () => {
    const { v4, v6 } = renderHostRules({ ...DEFAULT_POD_RULES_CONFIG, ipv6 });
    const recorded = [v4, v6]
      .filter((t) => t !== undefined)
      .map((t) => t.trimEnd())
      .join('\n');
    assert.equal(recorded, readGolden(golden).trimEnd());
  });
}

test('pod UIDs that cannot be ipset comments and pod IPs that are not IPs are refused before ipset runs', async () => {
  const rules = new HostProbeRules(DEFAULT_POD_RULES_CONFIG, '/var/run/netns/amesh-t-never-used');
  await assert.rejects(
    rules.addPod('a"b', ['10.0.0.1']),
    (e) => isMeshError(e, 'AGENT_ERR_HOST_RULES') && /ipset comment/.test(e.message),
  );
  await assert.rejects(
    rules.addPod('uid', ['10.0.0.300']),
    (e) => isMeshError(e, 'AGENT_ERR_HOST_RULES') && /not an IP/.test(e.message),
  );
  await assert.rejects(rules.removePod(''), (e) => isMeshError(e, 'AGENT_ERR_HOST_RULES'));
});
