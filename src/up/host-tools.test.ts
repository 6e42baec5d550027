import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../lib/errors.js';
import { requireHostTools } from './host-tools.js';

test('every missing host tool is named, with what it is for and the package to install; present ones pass', () => {
  requireHostTools([{ cmd: 'sh', pkg: 'dash', why: 'a shell' }], '/usr/bin:/bin');
  assert.throws(
    () =>
      requireHostTools(
        [
          { cmd: 'sh', pkg: 'dash', why: 'a shell' },
          { cmd: 'amesh-no-such-tool', pkg: 'nothing', why: 'a test' },
          { cmd: 'sh', pkg: 'plugins', why: 'a plugin', dirs: ['/amesh-no-such-dir', '/amesh-nor-this'] },
          { cmd: 'amesh-no-such-either', pkg: 'nothing', why: 'another test' },
        ],
        '/usr/bin:/bin',
      ),
    (e: unknown) =>
      isMeshError(e, 'UP_ERR_HOST_TOOL') &&
      e.message ===
        'missing on this machine: amesh-no-such-tool (a test), sh (a plugin, looked for in /amesh-no-such-dir and /amesh-nor-this), amesh-no-such-either (another test); install them: apt-get install nothing plugins',
  );
});
