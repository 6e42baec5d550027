import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../lib/errors.js';
import { requireHostTools } from './host-tools.js';

test('a missing host tool is named with what it is for and the package to install; present ones pass', () => {
  requireHostTools([{ cmd: 'sh', pkg: 'dash', why: 'a shell' }], '/usr/bin:/bin');
  assert.throws(
    () =>
      requireHostTools(
        [
          { cmd: 'sh', pkg: 'dash', why: 'a shell' },
          { cmd: 'amesh-no-such-tool', pkg: 'nothing', why: 'a test' },
        ],
        '/usr/bin:/bin',
      ),
    (e: unknown) =>
      isMeshError(e, 'UP_ERR_HOST_TOOL') &&
      e.message.includes('amesh-no-such-tool (a test)') &&
      e.message.endsWith('apt-get install nothing') &&
      !e.message.includes('sh (a shell)'),
  );
});
