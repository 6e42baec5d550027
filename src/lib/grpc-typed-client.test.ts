import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import {
  AggregatedDiscoveryService,
  type DeltaDiscoveryRequest,
  type DeltaDiscoveryResponse,
} from '../api/envoy/service/discovery/v3/discovery_pb.js';
import {
  IstioCertificateService,
  type IstioCertificateRequest,
  type IstioCertificateResponse,
} from '../api/istio/v1/auth/ca_pb.js';
import { grpcServiceDefinition } from './grpc-service.js';
import { makeTypedClient } from './grpc-typed-client.js';

let server: grpc.Server;
let address = '';

before(async () => {
  server = new grpc.Server();
  server.addService(grpcServiceDefinition(IstioCertificateService), {
    createCertificate: (
      call: grpc.ServerUnaryCall<IstioCertificateRequest, IstioCertificateResponse>,
      cb: grpc.sendUnaryData<Partial<IstioCertificateResponse>>,
    ) => cb(null, { certChain: [call.request.csr, String(call.request.validityDuration)] }),
  });
  server.addService(grpcServiceDefinition(AggregatedDiscoveryService), {
    deltaAggregatedResources: (call: grpc.ServerDuplexStream<DeltaDiscoveryRequest, object>) => {
      call.on('data', (r: DeltaDiscoveryRequest) => call.write({ typeUrl: r.typeUrl, nonce: r.node?.id ?? '' }));
      call.on('end', () => call.end());
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
      e === null ? resolve(p) : reject(e),
    ),
  );
  address = `127.0.0.1:${port}`;
});
after(() => server.forceShutdown());

test('a unary method takes an init object and answers a decoded message, by its localName', async () => {
  const client = makeTypedClient(IstioCertificateService, address, grpc.credentials.createInsecure());
  try {
    const res = await new Promise<IstioCertificateResponse>((resolve, reject) =>
      client.createCertificate({ csr: 'PEM', validityDuration: 60n }, new grpc.Metadata(), {}, (err, value) =>
        err === null ? resolve(value!) : reject(err),
      ),
    );
    assert.equal(res.$typeName, 'istio.v1.auth.IstioCertificateResponse');
    assert.deepEqual(res.certChain, ['PEM', '60']);
  } finally {
    client.close();
  }
});

test('a bidi method is a duplex of init objects out and decoded messages in', async () => {
  const client = makeTypedClient(AggregatedDiscoveryService, address, grpc.credentials.createInsecure());
  try {
    const call = client.deltaAggregatedResources(new grpc.Metadata());
    call.write({ typeUrl: 'type.googleapis.com/istio.workload.Address', node: { id: 'n1' } });
    const [res] = (await once(call, 'data')) as [DeltaDiscoveryResponse];
    assert.equal(res.$typeName, 'envoy.service.discovery.v3.DeltaDiscoveryResponse');
    assert.deepEqual([res.typeUrl, res.nonce], ['type.googleapis.com/istio.workload.Address', 'n1']);
    call.end();
    await once(call, 'end');
  } finally {
    client.close();
  }
});
