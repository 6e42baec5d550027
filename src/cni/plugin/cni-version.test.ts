import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../../lib/errors.js';
import { CNI_VERSIONS, checkCniVersion, versionResult } from './cni-version.js';

const versionError = (message: RegExp) => (e: unknown) => isMeshError(e, 'CNI_ERR_VERSION') && message.test(e.message);

test('ADD and DEL accept every spoken version from 0.3.0 to 1.1.0', () => {
  for (const v of CNI_VERSIONS) {
    assert.equal(checkCniVersion(v, 'ADD'), v);
    assert.equal(checkCniVersion(v, 'DEL'), v);
  }
});

test('a missing, pre-chaining or unknown cniVersion is refused with the supported list', () => {
  assert.throws(
    () => checkCniVersion(undefined, 'ADD'),
    versionError(/no "cniVersion" \(amesh-cni supports 0\.3\.0, 0\.3\.1, 0\.4\.0, 1\.0\.0, 1\.1\.0\)/),
  );
  assert.throws(() => checkCniVersion('0.2.0', 'ADD'), versionError(/"0\.2\.0" is not supported/));
  assert.throws(() => checkCniVersion('2.0.0', 'DEL'), versionError(/"2\.0\.0"/));
  assert.throws(() => checkCniVersion(1, 'ADD'), versionError(/cniVersion 1 is not supported/));
});

test('CHECK needs 0.4.0, GC and STATUS need 1.1.0', () => {
  assert.throws(
    () => checkCniVersion('0.3.1', 'CHECK'),
    versionError(/0\.3\.1 does not allow CHECK \(it came in CNI 0\.4\.0\)/),
  );
  assert.equal(checkCniVersion('0.4.0', 'CHECK'), '0.4.0');
  assert.throws(() => checkCniVersion('1.0.0', 'GC'), versionError(/does not allow GC/));
  assert.throws(() => checkCniVersion('1.0.0', 'STATUS'), versionError(/does not allow STATUS/));
  assert.equal(checkCniVersion('1.1.0', 'STATUS'), '1.1.0');
});

test('VERSION echoes a spoken input version, else answers with the newest; bad input is no error', () => {
  const supportedVersions = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'];
  assert.deepEqual(versionResult('{"cniVersion":"0.4.0"}'), { cniVersion: '0.4.0', supportedVersions });
  assert.deepEqual(versionResult('{"cniVersion":"0.1.0"}'), { cniVersion: '1.1.0', supportedVersions });
  assert.deepEqual(versionResult(''), { cniVersion: '1.1.0', supportedVersions });
  assert.deepEqual(versionResult('null'), { cniVersion: '1.1.0', supportedVersions });
});
