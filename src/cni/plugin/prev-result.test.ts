import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../../lib/errors.js';
import { BRIDGE_RESULT } from '../../../test/helpers/cni-network-config.js';
import { addResult, parsePrevResult } from './prev-result.js';

const configError = (message: RegExp) => (e: unknown) => isMeshError(e, 'CNI_ERR_CONFIG') && message.test(e.message);

test('ADD prints prevResult unchanged, labelled with the config version when the shape is the same', () => {
  const prev = parsePrevResult(BRIDGE_RESULT);
  assert.deepEqual(addResult(prev, '1.0.0'), BRIDGE_RESULT);
  assert.deepEqual(addResult(prev, '1.1.0'), { ...BRIDGE_RESULT, cniVersion: '1.1.0' });
  const v04 = { cniVersion: '0.3.1', ips: [{ version: '4', address: '10.244.1.5/24', interface: 0 }] };
  assert.deepEqual(addResult(parsePrevResult(v04), '0.4.0'), { ...v04, cniVersion: '0.4.0' });
  assert.deepEqual(
    addResult(parsePrevResult({ ips: [] }), '0.3.1'),
    { ips: [], cniVersion: '0.3.1' },
    'an unlabelled result takes the config version',
  );
});

test('a prevResult of another shape is printed as given, not half-converted', () => {
  assert.deepEqual(addResult(parsePrevResult(BRIDGE_RESULT), '0.4.0'), BRIDGE_RESULT);
});

test('no prevResult: an empty result of the config version', () => {
  assert.deepEqual(addResult(undefined, '0.3.1'), { cniVersion: '0.3.1' });
});

test('IPs are read as Go reads them: address with prefix, optional interface and gateway', () => {
  const prev = parsePrevResult({
    ips: [{ address: '10.244.1.5/24', gateway: '10.244.1.1', interface: 2 }, { address: 'FD00:0::5/64' }],
  });
  assert.deepEqual(
    prev.ips.map((ip) => [ip.address.length, ip.prefixLength, ip.interface, ip.gateway?.length]),
    [
      [4, 24, 2, 4],
      [16, 64, undefined, undefined],
    ],
  );
  assert.equal(parsePrevResult({}).ips.length, 0);
});

test('a malformed prevResult is a config error naming the entry', () => {
  assert.throws(() => parsePrevResult('{}'), configError(/^"prevResult" must be an object/));
  assert.throws(() => parsePrevResult({ ips: {} }), configError(/^"prevResult\.ips" must be a list/));
  assert.throws(
    () => parsePrevResult({ ips: [{ address: '10.0.0.5/33' }] }),
    configError(/^"prevResult\.ips\[0\]\.address"/),
  );
  assert.throws(
    () => parsePrevResult({ ips: [{ address: 'fe80::1%eth0/64' }] }),
    configError(/^"prevResult\.ips\[0\]\.address"/),
  );
  assert.throws(
    () => parsePrevResult({ ips: [{ address: '10.0.0.5/24' }, { address: '10.0.0.6/24', gateway: 'router' }] }),
    configError(/^"prevResult\.ips\[1\]\.gateway" must be an IP address/),
  );
  assert.throws(
    () => parsePrevResult({ ips: [{ address: '10.0.0.5/24', interface: -1 }] }),
    configError(/^"prevResult\.ips\[0\]\.interface"/),
  );
});
