import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseLogFormat } from './log.js';

test('LOG_FORMAT: unset or empty is text; text and json are taken in any case', () => {
  assert.equal(parseLogFormat({}), 'text');
  assert.equal(parseLogFormat({ LOG_FORMAT: '' }), 'text');
  assert.equal(parseLogFormat({ LOG_FORMAT: 'JSON' }), 'json');
  assert.equal(parseLogFormat({ LOG_FORMAT: 'Text' }), 'text');
});

test('LOG_FORMAT: any other value is a config error that names it, never a silent default', () => {
  assert.throws(() => parseLogFormat({ LOG_FORMAT: 'xml' }), {
    code: 'AMESH_ERR_CONFIG',
    message: 'LOG_FORMAT: "xml" must be text or json',
  });
});
