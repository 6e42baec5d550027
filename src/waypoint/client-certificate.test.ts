import { test } from 'node:test';
import assert from 'node:assert/strict';
import { subjectAltNameValues } from './client-certificate.js';

test("subject alternative names are read from Node's text of them: DNS, URI, email and IP values, a quoted one unquoted, other kinds left out", () => {
  assert.deepEqual(
    subjectAltNameValues(
      'DNS:client.test, URI:spiffe://cluster.local/ns/a/sa/b, IP Address:10.0.0.1, email:ops@example.test, DNS:"a,b.test", othername:1.2.3:x, Registered ID:1.2.3',
    ),
    ['client.test', 'spiffe://cluster.local/ns/a/sa/b', '10.0.0.1', 'ops@example.test', 'a,b.test'],
  );
  assert.deepEqual(subjectAltNameValues(undefined), []);
});
