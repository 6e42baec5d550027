import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from './api-error.js';
import { labelSelectorFromObject, parseLabelSelector, type LabelSelectorObject } from './label-selector.js';

function badRequest(fn: () => unknown, message: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ApiError);
    assert.equal(e.reason, 'BadRequest');
    assert.equal(e.code, 400);
    assert.equal(e.message, message);
    return true;
  });
}

test('parseLabelSelector: the good and bad strings of upstream TestSelectorParse and TestSetSelectorParser', () => {
  for (const good of [
    'x=a,y=b,z=c',
    '',
    'x!=a,y=b',
    'x=',
    'x= ',
    'x=,z= ',
    '!x',
    'x>1',
    'x>1,z<5',
    '\rx',
    'this-is-a-dns.domain.com/key-with-dash',
    '0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)',
    'foo  in\t (abc)',
    'x notin\n (abc)',
    'x in (abc,)',
    'x in ()',
    'x notin (abc,def),bar,z in (),w',
    'x notin ( )',
    'x notin (, a)',
    'a ',
    'a in (x,y,notin, z,in)',
  ]) {
    assert.doesNotThrow(() => parseLabelSelector(good), good);
  }
  for (const bad of [
    'x=a||y=b',
    'x==a==b',
    '!x=a',
    'x<a',
    ',x,y',
    'x nott in (y)',
    'a in (xyz),',
    'a in (xyz)b notin ()',
    'a in (xyz abc)',
    'a notin(',
    'a (',
    '(',
  ]) {
    assert.throws(() => parseLabelSelector(bad), ApiError, bad);
  }
});

test('parseLabelSelector: matching follows upstream TestSelectorMatches (in/notin on absent keys, gt/lt integers)', () => {
  const cases: [string, Record<string, string>, boolean][] = [
    ['', { x: 'y' }, true],
    ['x=y', { x: 'y' }, true],
    ['x=y,z=w', { x: 'y', z: 'w' }, true],
    ['x!=y,z!=w', { x: 'z', z: 'a' }, true],
    ['notin=in', { notin: 'in' }, true],
    ['x', { x: 'z' }, true],
    ['!x', { y: 'z' }, true],
    ['x>1', { x: '2' }, true],
    ['x<1', { x: '0' }, true],
    ['x=z', {}, false],
    ['x=y', { x: 'z' }, false],
    ['x!=y,z!=w', { x: 'z', z: 'w' }, false],
    ['x', { y: 'z' }, false],
    ['!x', { x: 'z' }, false],
    ['x>1', { x: '0' }, false],
    ['x>1', { x: 'v2' }, false],
    ['x notin (a)', {}, true],
    ['x in (a,b)', { x: 'b' }, true],
    ['x in ()', { x: '' }, true],
    ['x in ()', { y: 'baz' }, false],
    ['x==a', { x: 'a' }, true],
    ['x!=', { x: '' }, false],
  ];
  for (const [sel, labels, want] of cases)
    assert.equal(parseLabelSelector(sel).matches(labels), want, `${sel} on ${JSON.stringify(labels)}`);
  assert.equal(parseLabelSelector('x=y').matches(undefined), false);
  assert.equal(parseLabelSelector('').empty, true);
  assert.equal(parseLabelSelector('a').empty, false);
});

test('parseLabelSelector: syntax errors are 400 BadRequest worded as labels.Parse words them', () => {
  badRequest(() => parseLabelSelector('x=a,'), "found '', expected: identifier after ','");
  badRequest(() => parseLabelSelector('x=a b'), "found 'b', expected: ',' or 'end of string'");
  badRequest(
    () => parseLabelSelector('a b'),
    "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
  );
  badRequest(() => parseLabelSelector('!x=a'), "found '=', expected: ',' or 'end of string'");
  badRequest(() => parseLabelSelector('('), "found '(', expected: !, identifier, or 'end of string'");
  badRequest(
    () => parseLabelSelector('a notin('),
    "unable to parse requirement: found '', expected: ',', ')' or identifier",
  );
  badRequest(() => parseLabelSelector('a in x'), "unable to parse requirement: found 'x' expected: '('");
  badRequest(() => parseLabelSelector('a in (x y)'), "unable to parse requirement: found 'y', expected: ',' or ')'");
  badRequest(() => parseLabelSelector('x==a==b'), "found '==', expected: ',' or 'end of string'");
});

test('parseLabelSelector: invalid keys and values are refused with field.Error wording, values sorted as sets.String', () => {
  badRequest(
    () => parseLabelSelector('-a=b'),
    "unable to parse requirement: <nil>: Invalid value: \"-a\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
  );
  badRequest(
    () => parseLabelSelector('Example.com/a=b'),
    "unable to parse requirement: <nil>: Invalid value: \"Example.com/a\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
  );
  badRequest(
    () => parseLabelSelector(`a=${'v'.repeat(64)}`),
    `unable to parse requirement: values[0][a]: Invalid value: "${'v'.repeat(64)}": must be no more than 63 characters`,
  );
  // The bad value "z_" sorts after "b_" once the set is listed: indices follow the sorted order.
  badRequest(
    () => parseLabelSelector('a in (z_, b_)'),
    "unable to parse requirement: [values[0][a]: Invalid value: \"b_\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'), values[1][a]: Invalid value: \"z_\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')]",
  );
  badRequest(
    () => parseLabelSelector('x<a'),
    "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer",
  );
  badRequest(
    () => parseLabelSelector('a'.repeat(254)),
    `unable to parse requirement: <nil>: Invalid value: "${'a'.repeat(254)}": name part must be no more than 63 characters`,
  );
});

test('parseLabelSelector: requiresExactMatch finds =, == and single-valued in', () => {
  assert.equal(parseLabelSelector('a=1,b').requiresExactMatch('a'), '1');
  assert.equal(parseLabelSelector('a in (1)').requiresExactMatch('a'), '1');
  assert.equal(parseLabelSelector('a in (1,2)').requiresExactMatch('a'), undefined);
  assert.equal(parseLabelSelector('a!=1').requiresExactMatch('a'), undefined);
});

test('labelSelectorFromObject: nil selects nothing, empty everything, matchLabels AND matchExpressions', () => {
  assert.equal(labelSelectorFromObject(undefined).matches({ a: 'b' }), false);
  assert.equal(labelSelectorFromObject(null).empty, false);
  assert.equal(labelSelectorFromObject({}).matches({ a: 'b' }), true);
  assert.equal(labelSelectorFromObject({}).empty, true);
  const sel: LabelSelectorObject = {
    matchLabels: { app: 'web' },
    matchExpressions: [
      { key: 'tier', operator: 'In', values: ['front', 'edge'] },
      { key: 'canary', operator: 'DoesNotExist' },
      { key: 'zone', operator: 'Exists' },
      { key: 'env', operator: 'NotIn', values: ['dev'] },
    ],
  };
  const s = labelSelectorFromObject(sel);
  assert.equal(s.matches({ app: 'web', tier: 'edge', zone: 'a' }), true);
  assert.equal(s.matches({ app: 'web', tier: 'edge', zone: 'a', env: 'dev' }), false);
  assert.equal(s.matches({ app: 'web', tier: 'edge', zone: 'a', canary: '' }), false);
  assert.equal(s.matches({ app: 'web', tier: 'back', zone: 'a' }), false);
  assert.equal(s.matches({ app: 'api', tier: 'edge', zone: 'a' }), false);
});

test('labelSelectorFromObject: bad operators, value counts and keys are 400 BadRequest with NewRequirement wording', () => {
  badRequest(
    () => labelSelectorFromObject({ matchExpressions: [{ key: 'a', operator: 'Gt', values: ['1'] }] }),
    '"Gt" is not a valid pod selector operator',
  );
  badRequest(
    () => labelSelectorFromObject({ matchExpressions: [{ key: 'a', operator: 'In', values: [] }] }),
    "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
  );
  badRequest(
    () => labelSelectorFromObject({ matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] }),
    'values: Invalid value: []string{"x"}: values set must be empty for exists and does not exist',
  );
  badRequest(
    () => labelSelectorFromObject({ matchLabels: { 'a/b/c': 'x' } }),
    "key: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
  );
});
