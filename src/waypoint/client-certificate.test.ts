import { test } from 'node:test';
import assert from 'node:assert/strict';
import { subjectAltNameValues } from './client-certificate.js';

test("subject alternative names are read from Node's text of them: DNS, URI, email and IP values (IPv6 in its canonical form), a quoted one unquoted, other kinds left out", () => {
  assert.deepEqual(
    subjectAltNameValues(
      'DNS:client.test, URI:spiffe://cluster.local/ns/a/sa/b, IP Address:10.0.0.1, email:ops@example.test, DNS:"a,b.test", othername:1.2.3:x, Registered ID:1.2.3, IP Address:2001:DB8:0:0:0:0:0:1',
    ),
    ['client.test', 'spiffe://cluster.local/ns/a/sa/b', '10.0.0.1', 'ops@example.test', 'a,b.test', '2001:db8::1'],
  );
  assert.deepEqual(subjectAltNameValues(undefined), []);
});
