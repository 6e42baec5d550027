import * as grpc from '@grpc/grpc-js';
import {
  AggregatedDiscoveryService,
  type DeltaDiscoveryResponse,
} from '../../src/api/envoy/service/discovery/v3/discovery_pb.js';
import { grpcClient } from '../../src/ztunnel/grpc-channel.js';
import type { TypedClient } from '../../src/lib/grpc-typed-client.js';
import type { Istiod } from '../../src/istiod/istiod.js';

type Stream = ReturnType<TypedClient<typeof AggregatedDiscoveryService>['deltaAggregatedResources']>;

/** A raw delta-ADS client: collects responses, lets the test ACK/NACK by hand. `host`: where istiod listens. */
export function openStream(
  ist: Istiod,
  root: string,
  token: string,
  host = 'localhost',
): { stream: Stream; next: () => Promise<DeltaDiscoveryResponse> } {
  const client = grpcClient(
    AggregatedDiscoveryService,
    `https://${host}:${ist.ports.grpc}`,
    root,
    host === 'localhost' ? undefined : 'istiod.istio-system.svc',
  );
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${token}`);
  const stream = client.deltaAggregatedResources(md);
  const queue: DeltaDiscoveryResponse[] = [];
  const waiters: ((r: DeltaDiscoveryResponse) => void)[] = [];
  stream.on('data', (r: DeltaDiscoveryResponse) => {
    const w = waiters.shift();
    if (w !== undefined) w(r);
    else queue.push(r);
  });
  stream.on('error', () => undefined);
  stream.on('close', () => client.close());
  return {
    stream,
    next: () => (queue.length > 0 ? Promise.resolve(queue.shift()!) : new Promise((r) => waiters.push(r))),
  };
}
