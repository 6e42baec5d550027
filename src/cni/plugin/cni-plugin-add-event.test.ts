import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../../lib/errors.js';
import { addEventPodIps, cniPluginAddEvent, parseCniPluginAddEvent } from './cni-plugin-add-event.js';
import { parsePrevResult } from './prev-result.js';

test("the body is Go's JSON of Istio's CNIPluginAddEvent: capitalised fields, net.IPNet with a base64 mask", () => {
  const ips = parsePrevResult({ ips: [{ interface: 2, address: '10.244.1.5/24', gateway: '10.244.1.1' }] }).ips;
  assert.equal(
    JSON.stringify(cniPluginAddEvent('/var/run/netns/cni-1234', 'web-0', 'shop', ips)),
    '{"Netns":"/var/run/netns/cni-1234","PodName":"web-0","PodNamespace":"shop","IPs":[{"Interface":2,"Address":{"IP":"10.244.1.5","Mask":"////AA=="},"Gateway":"10.244.1.1"}]}',
  );
});

test('IPv6 is printed as Go prints it, a missing interface is null, a missing gateway ""', () => {
  const ips = parsePrevResult({
    ips: [{ address: 'FD00:10:244:0:0::5/64' }, { address: '::ffff:10.1.2.3/120', gateway: '::ffff:10.1.2.1' }],
  }).ips;
  assert.deepEqual(cniPluginAddEvent('/n', 'p', 'ns', ips).IPs, [
    { Interface: null, Address: { IP: 'fd00:10:244::5', Mask: '//////////8AAAAAAAAAAA==' }, Gateway: '' },
    { Interface: null, Address: { IP: '10.1.2.3', Mask: '////////////////////AA==' }, Gateway: '10.1.2.1' },
  ]);
});

test('no IPs is null, as Go marshals a nil slice', () => {
  assert.equal(cniPluginAddEvent('/n', 'p', 'ns', []).IPs, null);
});

test('the agent reads back what the plugin sends, mapped IPv4 unmapped', () => {
  const ips = parsePrevResult({
    ips: [{ interface: 2, address: '10.244.1.5/24', gateway: '10.244.1.1' }, { address: 'fd00::5/64' }],
  }).ips;
  const sent = cniPluginAddEvent('/var/run/netns/cni-1', 'web-0', 'shop', ips);
  const read = parseCniPluginAddEvent(JSON.stringify(sent));
  assert.deepEqual(read, sent);
  assert.deepEqual(addEventPodIps(read), ['10.244.1.5', 'fd00::5']);
  assert.deepEqual(addEventPodIps(parseCniPluginAddEvent('{"IPs":[{"Address":{"IP":"::ffff:10.1.2.3"}}]}')), [
    '10.1.2.3',
  ]);
});

test('absent fields and null are zero values, as Go unmarshals them', () => {
  assert.deepEqual(parseCniPluginAddEvent('{"PodName":"p"}'), { Netns: '', PodName: 'p', PodNamespace: '', IPs: null });
});

test('a body that is not the event is AGENT_ERR_BAD_EVENT naming the field', () => {
  for (const [body, field] of [
    ['not json', 'not JSON'],
    ['[]', 'JSON object'],
    ['{"PodName":5}', '"PodName"'],
    ['{"IPs":{}}', '"IPs"'],
    ['{"IPs":[{"Address":{"IP":"10.0.0.300"}}]}', '"IPs[0].Address.IP"'],
    ['{"IPs":[{"Interface":"eth0"}]}', '"IPs[0].Interface"'],
  ] as const) {
    assert.throws(
      () => parseCniPluginAddEvent(body),
      (e: unknown) => isMeshError(e, 'AGENT_ERR_BAD_EVENT') && e.message.includes(field),
      body,
    );
  }
});
