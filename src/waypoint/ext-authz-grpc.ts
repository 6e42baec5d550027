/**
 * One `envoy.service.auth.v3.Authorization/Check` call (envoy `api/envoy/service/auth/v3/external_auth.proto`) over
 * a stream the caller opened: the waypoint's HBONE tunnel to the provider. gRPC's unary framing (a flag byte, a
 * 32-bit length, the message) and its status trailers are written here over `node:http2`, because @grpc/grpc-js
 * dials connections of its own and cannot be handed a tunnel.
 */
import http2 from 'node:http2';
import type { Duplex } from 'node:stream';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import {
  CheckRequestSchema,
  CheckResponseSchema,
  type CheckRequest,
  type CheckResponse,
} from '../api/envoy/service/auth/v3/external_auth_pb.js';

const CHECK_PATH = '/envoy.service.auth.v3.Authorization/Check';

export function checkOverStream(stream: Duplex, request: CheckRequest, timeoutMs: number): Promise<CheckResponse> {
  const body = toBinary(CheckRequestSchema, request);
  const frame = Buffer.alloc(5 + body.length);
  frame.writeUInt32BE(body.length, 1);
  frame.set(body, 5);
  const session = http2.connect('http://ext-authz', { createConnection: () => stream });
  return new Promise<CheckResponse>((resolve, reject) => {
    const fail = (e: Error): void => {
      clearTimeout(timer);
      session.destroy();
      reject(e);
    };
    const timer = setTimeout(() => fail(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    session.on('error', fail);
    const call = session.request({
      ':method': 'POST',
      ':path': CHECK_PATH,
      'content-type': 'application/grpc',
      te: 'trailers',
      'grpc-timeout': `${timeoutMs}m`,
    });
    const chunks: Buffer[] = [];
    let status: string | undefined;
    call.on('response', (h) => {
      if (h[':status'] !== 200) fail(new Error(`HTTP ${String(h[':status'])} from the provider`));
      // A trailers-only answer carries its status in the headers.
      if (typeof h['grpc-status'] === 'string') status = h['grpc-status'];
    });
    call.on('trailers', (t: http2.IncomingHttpHeaders) => {
      const v = t['grpc-status'];
      if (typeof v === 'string') status = v;
    });
    call.on('data', (c: Buffer) => chunks.push(c));
    call.on('error', fail);
    call.on('end', () => {
      clearTimeout(timer);
      session.close();
      const all = Buffer.concat(chunks);
      if (status !== '0') {
        reject(new Error(`gRPC status ${status ?? '(none)'} from the provider`));
        return;
      }
      const length = all.length >= 5 ? all.readUInt32BE(1) : -1;
      if (length < 0 || all[0] !== 0 || all.length !== 5 + length) {
        reject(new Error('the provider answered no single uncompressed message'));
        return;
      }
      try {
        resolve(fromBinary(CheckResponseSchema, all.subarray(5)));
      } catch (e) {
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    });
    call.end(frame);
  });
}
