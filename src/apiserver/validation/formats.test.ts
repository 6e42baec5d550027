import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  isConfigMapKey,
  isDns1035Label,
  isDns1123Label,
  isDns1123Subdomain,
  isLabelValue,
  isQualifiedName,
  isValidPortName,
  nameIsDnsSubdomain,
} from './formats.js';

const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

test('DNS-1123 subdomain and label: upstream messages, word for word (the double space after the first example included)', () => {
  assert.deepEqual(isDns1123Subdomain('Foo'), [SUBDOMAIN_MSG]);
  assert.deepEqual(isDns1123Label('Foo'), [LABEL_MSG]);
  assert.deepEqual(isDns1123Label('a.b'), ['must not contain dots']);
  assert.deepEqual(isDns1123Subdomain('a'.repeat(254)), ['must be no more than 253 characters']);
  assert.deepEqual(isDns1123Label('a'.repeat(64)), ['must be no more than 63 characters']);
  for (const ok of ['a', 'web-1', 'a.b.c', '0abc']) assert.deepEqual(isDns1123Subdomain(ok), [], ok);
  for (const bad of ['', '-a', 'a-', 'a..b', 'a_b', 'A']) assert.equal(isDns1123Subdomain(bad).length, 1, bad);
});

test('DNS-1035 label (Service names): must start with a letter', () => {
  assert.deepEqual(isDns1035Label('my-svc'), []);
  assert.deepEqual(isDns1035Label('1svc'), [
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
  ]);
});

test('generateName: a trailing dash is allowed since a suffix follows (maskTrailingDash)', () => {
  assert.deepEqual(nameIsDnsSubdomain('web-', true), []);
  assert.equal(nameIsDnsSubdomain('web-', false).length, 1);
});

test('qualified names (label and annotation keys): prefix and name parts', () => {
  const table: [string, string[]][] = [
    ['app', []],
    ['example.com/App_1', []],
    ['app.kubernetes.io/name', []],
    ['/app', ['prefix part must be non-empty']],
    ['Example.com/app', [`prefix part ${SUBDOMAIN_MSG}`]],
    [
      'example.com/',
      [
        'name part must be non-empty',
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
      ],
    ],
    ['a'.repeat(64), ['name part must be no more than 63 characters']],
  ];
  for (const [key, errs] of table) assert.deepEqual(isQualifiedName(key), errs, key);
  assert.match(
    isQualifiedName('a/b/c')[0]!,
    /^a valid label key .* with an optional DNS subdomain prefix and '\/' \(e\.g\. 'example\.com\/MyName'\)$/,
  );
});

test('label values: empty is valid; at most 63 characters of the label alphabet', () => {
  for (const ok of ['', 'v1', 'a_b.c-d']) assert.deepEqual(isLabelValue(ok), [], ok);
  assert.deepEqual(isLabelValue('a'.repeat(64)), ['must be no more than 63 characters']);
  assert.match(isLabelValue('-x')[0]!, /^a valid label must be an empty string or consist of/);
});

test('ConfigMap and Secret keys; port names', () => {
  assert.deepEqual(isConfigMapKey('config.yaml'), []);
  assert.deepEqual(isConfigMapKey('..data'), ["must not start with '..'"]);
  assert.deepEqual(isConfigMapKey('.'), ["must not be '.'"]);
  assert.match(isConfigMapKey('a/b')[0]!, /^a valid config key must consist of alphanumeric characters/);
  assert.deepEqual(isValidPortName('http-web'), []);
  assert.deepEqual(isValidPortName('8080'), ['must contain at least one letter (a-z)']);
  assert.deepEqual(isValidPortName('a--b-'), [
    'must not contain consecutive hyphens',
    'must not begin or end with a hyphen',
  ]);
});
