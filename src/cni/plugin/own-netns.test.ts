import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isOwnNetns } from './own-netns.js';

test('the netns this process runs in is recognised by device and inode, whatever path names it', () => {
  assert.equal(isOwnNetns('/proc/self/ns/net'), true);
  assert.equal(isOwnNetns(`/proc/${process.pid}/ns/net`), true);
});

test('a path that is not there, or another namespace file, is not ours', () => {
  assert.equal(isOwnNetns('/var/run/netns/amesh-cni-no-such-netns'), false);
  assert.equal(isOwnNetns('/proc/self/ns/mnt'), false);
});
