import { test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogs } from '../../../test/helpers/captured-logs.js';
import { InstallThrottle } from './install-throttle.js';

test('one repair every 5 s passes at once; one sooner waits its turn', async () => {
  let now = 0;
  const throttle = new InstallThrottle(silentLogs('install').scope('install'), () => now);
  const never = new AbortController().signal;
  await throttle.wait(never, undefined);
  now = 5_000;
  await throttle.wait(never, undefined);
  now = 5_100;
  const stopped = new AbortController();
  stopped.abort(new Error('stopping'));
  // Its turn is 4.9 s away, so it waits, and stopping ends the wait.
  await assert.rejects(throttle.wait(stopped.signal, undefined), { name: 'AbortError' });
});
