import assert from 'node:assert/strict';
import test from 'node:test';
import { create } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { RetryPolicySchema } from '../api/amesh/waypoint/v1/waypoint_pb.js';
import { backoffMs, retriable, retryPolicyFromXds, type AttemptOutcome } from './retry-policy.js';

const policy = (retryOn: string[], codes: number[] = [], attempts = 2) =>
  retryPolicyFromXds(create(RetryPolicySchema, { attempts, retryOn, retriableStatusCodes: codes }));
const response = (status: number, grpcStatus?: string): AttemptOutcome => ({ t: 'response', status, grpcStatus });
const CONNECT: AttemptOutcome = { t: 'connect-failure' };
const RESET: AttemptOutcome = { t: 'reset', refusedStream: false };
const REFUSED: AttemptOutcome = { t: 'reset', refusedStream: true };
const TIMEOUT: AttemptOutcome = { t: 'per-try-timeout' };

test("a route without a policy gets Istio's default: 2 retries of connect failures, refused streams and gRPC unavailable/cancelled, not of a 503", () => {
  const d = retryPolicyFromXds(undefined);
  assert.equal(d.attempts, 2);
  assert.deepEqual(
    [CONNECT, REFUSED, RESET, TIMEOUT, response(503), response(200, '14'), response(200, '1'), response(200, '13')].map(
      (o) => retriable(d, o),
    ),
    [true, true, false, false, false, true, true, false],
  );
});

test('a policy with attempts but no conditions takes the default conditions', () => {
  const p = policy([], [], 5);
  assert.equal(p.attempts, 5);
  assert.equal(retriable(p, CONNECT), true);
  assert.equal(retriable(p, response(503)), false);
});

test('5xx retries any 5xx and every attempt that brought no response; gateway-error only 502-504', () => {
  const five = policy(['5xx']);
  assert.deepEqual(
    [response(500), response(503), response(599), response(404), CONNECT, RESET, TIMEOUT].map((o) =>
      retriable(five, o),
    ),
    [true, true, true, false, true, true, true],
  );
  const gw = policy(['gateway-error']);
  assert.deepEqual(
    [response(500), response(502), response(503), response(504), CONNECT, TIMEOUT].map((o) => retriable(gw, o)),
    [false, true, true, true, true, true],
  );
});

test('connect-failure alone does not retry a reset or a timeout; reset does; refused-stream only a refused stream', () => {
  const c = policy(['connect-failure']);
  assert.deepEqual(
    [CONNECT, RESET, TIMEOUT].map((o) => retriable(c, o)),
    [true, false, false],
  );
  const r = policy(['reset']);
  assert.deepEqual(
    [CONNECT, RESET, TIMEOUT, response(503)].map((o) => retriable(r, o)),
    [true, true, true, false],
  );
  const s = policy(['refused-stream']);
  assert.deepEqual(
    [REFUSED, RESET].map((o) => retriable(s, o)),
    [true, false],
  );
});

test("retriable-status-codes retries only the route's statuses; retriable-4xx only 409", () => {
  const p = policy(['retriable-status-codes'], [503, 429]);
  assert.deepEqual(
    [response(503), response(429), response(500)].map((o) => retriable(p, o)),
    [true, true, false],
  );
  const q = policy(['retriable-4xx']);
  assert.deepEqual(
    [response(409), response(429)].map((o) => retriable(q, o)),
    [true, false],
  );
});

test("gRPC conditions read the grpc-status of a trailers-only answer's headers", () => {
  const p = policy(['deadline-exceeded', 'resource-exhausted', 'internal']);
  assert.deepEqual(
    ['4', '8', '13', '14', '0'].map((g) => retriable(p, response(200, g))),
    [true, true, true, false, false],
  );
});

test('the per-try timeout comes through; back-off stays under 25 ms × (2^n − 1), and at most 250 ms', () => {
  const p = retryPolicyFromXds(create(RetryPolicySchema, { attempts: 1, perTryTimeout: durationFromMs(1500) }));
  assert.equal(p.perTryTimeoutMs, 1500);
  assert.deepEqual(
    [1, 2, 3, 4, 10].map((n) => backoffMs(n, () => 0.999)),
    [24, 74, 174, 249, 249],
  );
  assert.equal(
    backoffMs(3, () => 0),
    0,
  );
});
