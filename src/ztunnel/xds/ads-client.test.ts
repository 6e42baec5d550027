import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import { anyPack } from '@bufbuild/protobuf/wkt';
import { Registry as MetricsRegistry } from 'prom-client';
import {
  AggregatedDiscoveryService,
  type DeltaDiscoveryRequest,
} from '../../api/envoy/service/discovery/v3/discovery_pb.js';
import { AddressSchema, TunnelProtocol } from '../../api/istio/workload/workload_pb.js';
import { grpcServiceDefinition } from '../../lib/grpc-service.js';
import { CertificateAuthority, issueServingCertificate } from '../../lib/pki/certificate-authority.js';
import { LogControl } from '../../lib/log.js';
import { ProxyState } from '../state/proxy-state.js';
import { ADDRESS_TYPE, AUTHORIZATION_TYPE, AdsClient } from './ads-client.js';

type Stream = grpc.ServerDuplexStream<DeltaDiscoveryRequest, object>;

/** A delta-ADS server of our own (real gRPC over TLS) that records each stream's requests and lets the test answer. */
class FakeIstiod extends EventEmitter<{ stream: [Stream]; request: [Stream, DeltaDiscoveryRequest] }> {
  readonly server = new grpc.Server();
  readonly requests = new Map<Stream, DeltaDiscoveryRequest[]>();
  port = 0;

  async start(keyPem: string, chain: string[]): Promise<void> {
    this.server.addService(grpcServiceDefinition(AggregatedDiscoveryService), {
      deltaAggregatedResources: (call: Stream) => {
        this.requests.set(call, []);
        call.on('data', (r: DeltaDiscoveryRequest) => {
          this.requests.get(call)!.push(r);
          this.emit('request', call, r);
        });
        call.on('error', () => undefined);
        this.emit('stream', call);
      },
    });
    this.port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync(
        '127.73.5.1:0',
        grpc.ServerCredentials.createSsl(null, [
          { private_key: Buffer.from(keyPem), cert_chain: Buffer.from(chain.slice(0, -1).join('')) },
        ]),
        (e, p) => (e === null ? resolve(p) : reject(e)),
      ),
    );
  }

  /** The next request on `call` that `match` accepts (already received or still to come). */
  next(call: Stream, match: (r: DeltaDiscoveryRequest) => boolean): Promise<DeltaDiscoveryRequest> {
    const seen = this.requests.get(call)!.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve) => {
      const on = (c: Stream, r: DeltaDiscoveryRequest): void => {
        if (c !== call || !match(r)) return;
        this.off('request', on);
        resolve(r);
      };
      this.on('request', on);
    });
  }
}

const workload = (uid: string, ip: number[], proto = TunnelProtocol.HBONE, version = '1') => ({
  name: uid,
  version,
  resource: anyPack(
    AddressSchema,
    create(AddressSchema, {
      type: {
        case: 'workload',
        value: { uid, name: uid, namespace: 'ns', addresses: [new Uint8Array(ip)], tunnelProtocol: proto },
      },
    }),
  ),
});
const silent = new LogControl({
  format: 'json',
  level: 'silent',
  component: 't',
  out: new Writable({ write: (_c, _e, cb) => cb() }),
}).scope('xds');

test('ADS client: initial requests, ACK and per-resource NACK by nonce, removals, and a reconnect that sends initial_resource_versions of what it holds', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-ads-'));
  const ca = await CertificateAuthority.selfSigned('cluster.local');
  const serving = await issueServingCertificate(ca, ['istiod.istio-system.svc'], 3600);
  const istiod = new FakeIstiod();
  await istiod.start(serving.keyPem, serving.chain);
  await writeFile(path.join(dir, 'token'), 'a-token\n');
  const state = new ProxyState();
  const uids = (): string[] => state.dump().workloads.map((w) => w.uid);
  const ads = new AdsClient(
    {
      address: `https://127.73.5.1:${istiod.port}`,
      rootCa: serving.chain[serving.chain.length - 1]!,
      tokenFile: path.join(dir, 'token'),
      clusterId: 'c1',
      altHostname: 'istiod.istio-system.svc',
      headers: [['x-tenant', 't1']],
      node: {
        id: 'ztunnel~10.0.0.1~zt.istio-system~istio-system.svc.cluster.local',
        metadata: { NODE_NAME: 'n1', LABELS: { a: 'b' } },
      },
    },
    (delta) => state.update(delta),
    new MetricsRegistry(),
    silent,
  );
  try {
    const firstStream = once(istiod, 'stream');
    await ads.start();
    const [call] = (await firstStream) as [Stream];
    const md = call.metadata.getMap();
    assert.deepEqual(
      [md['authorization'], md['clusterid'], md['x-tenant']],
      ['Bearer a-token', 'c1', 't1'],
      'token, cluster and XDS_HEADER_* metadata',
    );
    const addr = await istiod.next(call, (r) => r.typeUrl === ADDRESS_TYPE);
    const authz = await istiod.next(call, (r) => r.typeUrl === AUTHORIZATION_TYPE);
    assert.deepEqual(
      istiod.requests.get(call)!.map((r) => r.typeUrl),
      [ADDRESS_TYPE, AUTHORIZATION_TYPE],
      'Address first, then Authorization',
    );
    assert.equal(addr.node?.id, 'ztunnel~10.0.0.1~zt.istio-system~istio-system.svc.cluster.local');
    assert.deepEqual(addr.node?.metadata, { NODE_NAME: 'n1', LABELS: { a: 'b' } });
    assert.equal(authz.node, undefined, 'the node goes on the first request only');
    assert.deepEqual(
      [addr.resourceNamesSubscribe, addr.initialResourceVersions],
      [[], {}],
      'wildcard, nothing held yet',
    );

    // One good and one unacceptable resource: the good one applies, the other is NACKed by name with this nonce.
    const connected = once(ads, 'connected');
    call.write({
      typeUrl: ADDRESS_TYPE,
      nonce: 'n1',
      resources: [
        workload('good', [127, 73, 5, 2]),
        workload('legacy', [127, 73, 5, 3], TunnelProtocol.LEGACY_ISTIO_MTLS),
      ],
    });
    await connected;
    const nack = await istiod.next(call, (r) => r.responseNonce === 'n1');
    assert.equal(nack.typeUrl, ADDRESS_TYPE);
    assert.match(nack.errorDetail?.message ?? '', /^legacy: /);
    assert.deepEqual(uids(), ['good']);
    assert.deepEqual(
      ads.pending(),
      [`xds ${AUTHORIZATION_TYPE.slice(AUTHORIZATION_TYPE.lastIndexOf('/') + 1)}`],
      'readiness waits for every type',
    );

    // A clean response is ACKed: its nonce, no error.
    call.write({
      typeUrl: ADDRESS_TYPE,
      nonce: 'n2',
      resources: [workload('other', [127, 73, 5, 4], TunnelProtocol.HBONE, '7')],
    });
    const ack = await istiod.next(call, (r) => r.responseNonce === 'n2');
    assert.deepEqual([ack.typeUrl, ack.errorDetail], [ADDRESS_TYPE, undefined]);
    assert.deepEqual(uids(), ['good', 'other'], 'a delta adds to what is held');
    call.write({ typeUrl: AUTHORIZATION_TYPE, nonce: 'a1', resources: [] });
    await istiod.next(call, (r) => r.responseNonce === 'a1');
    assert.deepEqual(ads.pending(), []);

    // A removal, then a type ztunnel does not handle (NACKed, nothing applied).
    call.write({ typeUrl: ADDRESS_TYPE, nonce: 'n3', resources: [], removedResources: ['other'] });
    await istiod.next(call, (r) => r.responseNonce === 'n3');
    assert.deepEqual(uids(), ['good']);
    // A service is removed by its resource name, which is not a workload uid.
    const svcName = 'backend/echo.backend.svc.cluster.local';
    const service = anyPack(
      AddressSchema,
      create(AddressSchema, {
        type: {
          case: 'service',
          value: {
            name: 'echo',
            namespace: 'backend',
            hostname: 'echo.backend.svc.cluster.local',
            addresses: [{ address: new Uint8Array([10, 96, 73, 1]) }],
          },
        },
      }),
    );
    call.write({ typeUrl: ADDRESS_TYPE, nonce: 's1', resources: [{ name: svcName, version: '1', resource: service }] });
    await istiod.next(call, (r) => r.responseNonce === 's1');
    assert.equal(state.serviceByVip('', '10.96.73.1', 'backend')?.name, 'echo');
    call.write({ typeUrl: ADDRESS_TYPE, nonce: 's2', resources: [], removedResources: [svcName] });
    await istiod.next(call, (r) => r.responseNonce === 's2');
    assert.equal(state.serviceByVip('', '10.96.73.1', 'backend'), undefined);
    assert.equal(state.serviceByKey(svcName), undefined);
    call.write({ typeUrl: 'type.googleapis.com/istio.workload.Workload', nonce: 'w1', resources: [] });
    assert.match(
      (await istiod.next(call, (r) => r.responseNonce === 'w1')).errorDetail?.message ?? '',
      /does not handle/,
    );

    // istiod ends the stream (as on max connection age): the client comes back at once and says what it holds,
    // without the NACKed resource, so istiod sends only what changed.
    const second = once(istiod, 'stream');
    call.end();
    const [call2] = (await second) as [Stream];
    const again = await istiod.next(call2, (r) => r.typeUrl === ADDRESS_TYPE);
    assert.deepEqual(again.initialResourceVersions, { good: '1' });
    assert.equal(
      again.node?.id,
      'ztunnel~10.0.0.1~zt.istio-system~istio-system.svc.cluster.local',
      'a new stream sends the node again',
    );
  } finally {
    ads.stop();
    istiod.server.forceShutdown();
    await rm(dir, { recursive: true, force: true });
  }
});
