/**
 * Writing API responses: JSON bodies, `Status` errors, and reading request bodies within a size limit. Request
 * objects come as JSON or, from kubectl's typed generators, as Kubernetes protobuf (decoded into the same JSON).
 */
import type http from 'node:http';
import { ApiError } from '../api-error.js';
import { decodeProtobufBody, PROTOBUF_MEDIA_TYPE } from '../protobuf/convert.js';

/** The API server refuses request bodies over 3 MiB (k8s.io/apiserver's default MaxRequestBodyBytes). */
export const MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024;

export function sendJson(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  contentType = 'application/json',
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-cache, private',
  });
  res.end(text);
}

export function sendError(res: http.ServerResponse, e: ApiError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, e.code, e.toStatus());
}

export function sendText(res: http.ServerResponse, status: number, text: string): void {
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'x-content-type-options': 'nosniff',
  });
  res.end(text);
}

/** Reads the whole body; over {@link MAX_REQUEST_BODY_BYTES} it is 413 RequestEntityTooLarge. */
export async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > MAX_REQUEST_BODY_BYTES)
      throw new ApiError('RequestEntityTooLarge', `the request body is larger than ${MAX_REQUEST_BODY_BYTES} bytes`);
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

/** The object of a create or update: JSON, or Kubernetes protobuf; 400 or 415 naming what could not be decoded. */
export function parseObjectBody(body: Buffer, contentType: string | undefined): unknown {
  return mediaTypeOf(contentType) === PROTOBUF_MEDIA_TYPE ? decodeProtobufBody(body) : parseJsonBody(body, contentType);
}

/** A JSON body, or 400 BadRequest naming what could not be decoded. */
export function parseJsonBody(body: Buffer, contentType: string | undefined): unknown {
  const type = mediaTypeOf(contentType);
  if (type !== '' && !type.endsWith('json') && type !== '*/*') {
    throw new ApiError(
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: application/json, ${PROTOBUF_MEDIA_TYPE}`,
    );
  }
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch (e) {
    throw new ApiError('BadRequest', `the body of the request could not be decoded as JSON: ${(e as Error).message}`);
  }
}

function mediaTypeOf(contentType: string | undefined): string {
  return (contentType ?? 'application/json').split(';')[0]?.trim().toLowerCase() ?? '';
}
