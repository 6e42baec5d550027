import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, fstatSync } from 'node:fs';
import { isMeshError } from '../../lib/errors.js';
import { encodeWorkloadRequest } from '../../zds/zds-codec.js';
import { ownNetnsFd } from '../../../test/helpers/recording-runner.js';
import { readWorkloadMessage } from './workload-message.js';

const info = { name: 'web', namespace: 'default', serviceAccount: 'web' };
const isClosed = (fd: number): boolean => {
  try {
    fstatSync(fd);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EBADF';
  }
};

test('an AddWorkload with exactly one fd (SCM_RIGHTS) reads as an add that owns it', () => {
  const fd = ownNetnsFd();
  assert.deepEqual(readWorkloadMessage(encodeWorkloadRequest({ kind: 'add', uid: 'a', info }), [fd]), {
    kind: 'add',
    uid: 'a',
    info,
    netns: fd,
  });
  closeSync(fd);
});

test('fds with a datagram that is refused are closed: two fds with an Add, an fd with a Del, an fd with undecodable bytes', () => {
  const cases: [Buffer, number][] = [
    [encodeWorkloadRequest({ kind: 'add', uid: 'a', info }), 2],
    [encodeWorkloadRequest({ kind: 'del', uid: 'a' }), 1],
    [Buffer.from('0a0e0a01', 'hex'), 1],
  ];
  for (const [data, n] of cases) {
    const fds = Array.from({ length: n }, ownNetnsFd);
    assert.throws(
      () => readWorkloadMessage(data, fds),
      (e: unknown) => isMeshError(e, 'ZDS_ERR_DECODE'),
    );
    assert.deepEqual(
      fds.map(isClosed),
      fds.map(() => true),
    );
  }
});

test('an AddWorkload without an fd is ZDS_ERR_DECODE', () => {
  assert.throws(
    () => readWorkloadMessage(encodeWorkloadRequest({ kind: 'add', uid: 'a', info }), []),
    (e: unknown) => isMeshError(e, 'ZDS_ERR_DECODE'),
  );
});
