/**
 * The ZDS conversion boundary: the generated protobuf types (`src/api/istio/workload/zds/zds_pb.ts`, Istio's
 * wire format from ztunnel `proto/zds.proto`) become plain TypeScript values here and nowhere else. Each function
 * handles exactly one datagram; a datagram that does not decode as the expected message is `ZDS_ERR_DECODE`.
 */
import { create, fromBinary, toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import {
  Version,
  WorkloadRequestSchema,
  WorkloadResponseSchema,
  ZdsHelloSchema,
  type WorkloadInfo as WorkloadInfoPb,
} from '../api/istio/workload/zds/zds_pb.js';
import { MeshError } from '../lib/errors.js';
import type { WorkloadInfo } from './workload-info.js';

export { Version as ZdsVersion };

/**
 * What the node agent asks of ztunnel (`WorkloadRequest`). An `add` without `workload_info` decodes (its `info` is
 * undefined): refusing it is ztunnel's state manager's call, a protocol error rather than an undecodable datagram.
 */
export type WorkloadRequest =
  | { readonly kind: 'add'; readonly uid: string; readonly info: WorkloadInfo | undefined }
  | { readonly kind: 'keep'; readonly uid: string }
  | { readonly kind: 'del'; readonly uid: string }
  | { readonly kind: 'snapshotSent' };

function decode<Desc extends DescMessage>(schema: Desc, data: Uint8Array): MessageShape<Desc> {
  try {
    return fromBinary(schema, data);
  } catch (e) {
    throw new MeshError(
      'ZDS_ERR_DECODE',
      `a ZDS datagram of ${data.length} bytes is not a ${schema.typeName}: ${(e as Error).message}`,
      { cause: e },
    );
  }
}

function infoFromPb(w: WorkloadInfoPb | undefined): WorkloadInfo | undefined {
  return w === undefined ? undefined : { name: w.name, namespace: w.namespace, serviceAccount: w.serviceAccount };
}

/** ztunnel's first datagram on a connection. */
export function encodeHello(version: Version = Version.V1): Buffer {
  return Buffer.from(toBinary(ZdsHelloSchema, create(ZdsHelloSchema, { version })));
}

/** The version a `ZdsHello` announces. */
export function decodeHello(data: Uint8Array): Version {
  return decode(ZdsHelloSchema, data).version;
}

export function encodeWorkloadRequest(r: WorkloadRequest): Buffer {
  let payload;
  switch (r.kind) {
    case 'add':
      payload = { case: 'add' as const, value: { uid: r.uid, workloadInfo: r.info } };
      break;
    case 'keep':
      payload = { case: 'keep' as const, value: { uid: r.uid } };
      break;
    case 'del':
      payload = { case: 'del' as const, value: { uid: r.uid } };
      break;
    case 'snapshotSent':
      payload = { case: 'snapshotSent' as const, value: {} };
      break;
  }
  return Buffer.from(toBinary(WorkloadRequestSchema, create(WorkloadRequestSchema, { payload })));
}

/** A `WorkloadRequest`; one with no payload (or a payload this version does not know) is `ZDS_ERR_DECODE`. */
export function decodeWorkloadRequest(data: Uint8Array): WorkloadRequest {
  const { payload } = decode(WorkloadRequestSchema, data);
  switch (payload.case) {
    case 'add':
      return { kind: 'add', uid: payload.value.uid, info: infoFromPb(payload.value.workloadInfo) };
    case 'keep':
      return { kind: 'keep', uid: payload.value.uid };
    case 'del':
      return { kind: 'del', uid: payload.value.uid };
    case 'snapshotSent':
      return { kind: 'snapshotSent' };
    case undefined:
      throw new MeshError(
        'ZDS_ERR_DECODE',
        `a ZDS WorkloadRequest of ${data.length} bytes has no payload (add, keep, del or snapshot_sent)`,
      );
  }
}

/** ztunnel's reply to each request: an ack, or a nack when `error` is not empty. */
export function encodeAck(error = ''): Buffer {
  return Buffer.from(
    toBinary(WorkloadResponseSchema, create(WorkloadResponseSchema, { payload: { case: 'ack', value: { error } } })),
  );
}

/** The `Ack`'s error ('' for an ack); a response without an ack is `ZDS_ERR_DECODE`. */
export function decodeAck(data: Uint8Array): string {
  const { payload } = decode(WorkloadResponseSchema, data);
  if (payload.case !== 'ack')
    throw new MeshError('ZDS_ERR_DECODE', `a ZDS WorkloadResponse of ${data.length} bytes carries no ack`);
  return payload.value.error;
}
