import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../../../lib/errors.js';
import { checkFieldName, checkFieldValue } from './field-validity.js';

const malformed = (what: RegExp) => (e: unknown): boolean => isMeshError(e, 'H2_ERR_COMPRESSION') && what.test(e.message) && e.message.endsWith('at byte 7 of the header block');

test('names: lowercase tokens and pseudo-header names pass', () => {
  for (const name of [':authority', ':method', 'content-type', 'x-b3-traceid', 'a_b.c~d!#$%&*+^`|']) checkFieldName(name, 7);
});

test('names: empty, uppercase, controls, space, DEL, octets above 0x7f and a colon past the first char are malformed', () => {
  assert.throws(() => checkFieldName('', 7), malformed(/empty header field name/));
  assert.throws(() => checkFieldName('Content-Type', 7), malformed(/"Content-Type" has an uppercase character/));
  assert.throws(() => checkFieldName('x-a\u0000', 7), malformed(/character 0x00 at 3/));
  assert.throws(() => checkFieldName('a b', 7), malformed(/character 0x20 at 1/));
  assert.throws(() => checkFieldName('a\u007f', 7), malformed(/character 0x7f at 1/));
  assert.throws(() => checkFieldName('a\u00c8', 7), malformed(/character 0xc8 at 1/));
  assert.throws(() => checkFieldName('a:b', 7), malformed(/character 0x3a at 1/));
  assert.throws(() => checkFieldName('::a', 7), malformed(/character 0x3a at 1/));
});

test('an offending name is quoted escaped and cut at 64 chars; values are never quoted', () => {
  assert.throws(() => checkFieldName(`A${'x'.repeat(100)}`, 7), (e: unknown) => e instanceof Error && e.message.includes(`"A${'x'.repeat(63)}..."`));
  assert.throws(() => checkFieldName('a\nb', 7), (e: unknown) => e instanceof Error && e.message.includes('"a\\nb"'));
  assert.throws(() => checkFieldValue('authorization', 'Bearer secret\r\n', 7), (e: unknown) => e instanceof Error && !e.message.includes('secret'));
});

test('values: inner spaces, tabs and octets above 0x7f pass; NUL, LF, CR anywhere and whitespace at either end are malformed', () => {
  for (const value of ['', 'a', 'a b\tc', '\u00ff\u0080', 'gzip, deflate']) checkFieldValue('x', value, 7);
  assert.throws(() => checkFieldValue('x', 'a\u0000', 7), malformed(/value of "x" has character 0x00 at 1/));
  assert.throws(() => checkFieldValue('x', 'a\nb', 7), malformed(/character 0x0a at 1/));
  assert.throws(() => checkFieldValue('x', '\rb', 7), malformed(/character 0x0d at 0/));
  assert.throws(() => checkFieldValue('x', ' a', 7), malformed(/starts or ends with whitespace/));
  assert.throws(() => checkFieldValue('x', 'a\t', 7), malformed(/starts or ends with whitespace/));
  assert.throws(() => checkFieldValue('x', ' ', 7), malformed(/starts or ends with whitespace/));
});
