import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../lib/errors.js';
import {
  decodeAck,
  decodeHello,
  decodeWorkloadRequest,
  encodeAck,
  encodeHello,
  encodeWorkloadRequest,
  ZdsVersion,
} from './zds-codec.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const isDecodeError = (e: unknown): boolean => isMeshError(e, 'ZDS_ERR_DECODE');

// Expected bytes are written out by hand from ztunnel's proto/zds.proto field numbers, so a renumbered field fails.

test('ZdsHello{version: V1} is field 1 varint 1', () => {
  assert.equal(hex(encodeHello()), '0801');
  assert.equal(decodeHello(Buffer.from('0801', 'hex')), ZdsVersion.V1);
});

test('WorkloadRequest oneof numbers: add 1 (uid 1, workload_info 2 = name 1, namespace 2, service_account 3), del 2 (uid 2), snapshot_sent 3, keep 5 (uid 1)', () => {
  const add = encodeWorkloadRequest({
    kind: 'add',
    uid: 'u',
    info: { name: 'n', namespace: 's', serviceAccount: 'a' },
  });
  assert.equal(hex(add), '0a0e' + '0a0175' + '1209' + '0a016e' + '120173' + '1a0161');
  assert.equal(hex(encodeWorkloadRequest({ kind: 'del', uid: 'u' })), '1203' + '120175');
  assert.equal(hex(encodeWorkloadRequest({ kind: 'snapshotSent' })), '1a00');
  assert.equal(hex(encodeWorkloadRequest({ kind: 'keep', uid: 'u' })), '2a03' + '0a0175');
});

test("WorkloadRequest round trip, and an add without workload_info decodes with info undefined (refusing it is the state manager's call)", () => {
  for (const r of [
    { kind: 'add', uid: 'pod-1', info: { name: 'web', namespace: 'default', serviceAccount: 'sa' } },
    { kind: 'add', uid: 'pod-2', info: undefined },
    { kind: 'keep', uid: 'pod-3' },
    { kind: 'del', uid: 'pod-4' },
    { kind: 'snapshotSent' },
  ] as const) {
    assert.deepEqual(decodeWorkloadRequest(encodeWorkloadRequest(r)), r);
  }
});

test('WorkloadResponse: ack is field 1, Ack.error field 1; an empty error is an ack, any other a nack', () => {
  assert.equal(hex(encodeAck()), '0a00');
  assert.equal(hex(encodeAck('no')), '0a04' + '0a026e6f');
  assert.equal(decodeAck(encodeAck()), '');
  assert.equal(decodeAck(encodeAck('failure to start proxy : x')), 'failure to start proxy : x');
});

test('a datagram that does not decode is ZDS_ERR_DECODE: truncated bytes, a WorkloadRequest without payload, a response without ack', () => {
  assert.throws(() => decodeWorkloadRequest(Buffer.from('0a0e0a01', 'hex')), isDecodeError);
  assert.throws(() => decodeWorkloadRequest(Buffer.alloc(0)), isDecodeError);
  // Field 9 (unknown to this version) only: no payload this side can act on.
  assert.throws(() => decodeWorkloadRequest(Buffer.from('4801', 'hex')), isDecodeError);
  assert.throws(() => decodeAck(Buffer.alloc(0)), isDecodeError);
  assert.throws(() => decodeHello(Buffer.from('ff', 'hex')), isDecodeError);
});
