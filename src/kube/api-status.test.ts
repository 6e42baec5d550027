import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStatus, parseStatus } from './api-status.js';

test("parseStatus reads an error answer's Status (text or parsed) and describeStatus words it as code reason: message", () => {
  const body = {
    kind: 'Status',
    reason: 'Invalid',
    message: 'spec.x: Required value',
    details: { causes: [{ reason: 'FieldValueRequired' }] },
  };
  const s = parseStatus(422, JSON.stringify(body));
  assert.deepEqual(s, parseStatus(422, body));
  assert.deepEqual(s.causes, ['FieldValueRequired']);
  assert.equal(describeStatus(s), '422 Invalid: spec.x: Required value');
  assert.equal(describeStatus(parseStatus(502, '<html>bad gateway</html>')), '502');
});
