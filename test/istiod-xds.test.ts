import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile, rename, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import { anyPack } from '@bufbuild/protobuf/wkt';
import {
  AggregatedDiscoveryService,
  type DeltaDiscoveryRequest,
} from '../src/api/envoy/service/discovery/v3/discovery_pb.js';
import { AddressSchema, TunnelProtocol } from '../src/api/istio/workload/workload_pb.js';
import { grpcServiceDefinition } from '../src/lib/grpc-service.js';
import type { Istiod } from '../src/istiod/istiod.js';
import { startIstiod, startZtunnel } from './helpers/in-process.js';
import { openStream } from './helpers/ads-stream.js';
import { namespaces, pod } from './helpers/manifests.js';
import { waitFor } from './helpers/mesh-fixture.js';

const ADDRESS = 'type.googleapis.com/istio.workload.Address';
const AUTHZ = 'type.googleapis.com/istio.security.Authorization';

const PODS = (n: number): string =>
  namespaces('ns') +
  Array.from({ length: n }, (_, i) =>
    pod({ name: `p${i}`, namespace: 'ns', node: 'n1', ip: `127.80.0.${i + 1}`, ambient: false }),
  ).join('');

describe('istiod delta ADS', () => {
  let dir: string;
  let ist: Istiod;
  let root: string;
  let token: string;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-xds-'));
    await mkdir(path.join(dir, 'config'));
    await writeFile(path.join(dir, 'config', 'pods.yaml'), PODS(3));
    ist = await startIstiod(path.join(dir, 'config'), path.join(dir, 'state'));
    root = await readFile(ist.rootCertPath, 'utf8');
    token = await ist.issuer.issue({
      namespace: 'istio-system',
      serviceAccount: 'ztunnel',
      audience: 'istio-ca',
      node: 'n1',
    });
  });
  after(async () => {
    await ist.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('a reconnecting client is not re-sent the resources it already holds; a changed one is', async () => {
    const first = openStream(ist, root, token);
    first.stream.write({
      typeUrl: ADDRESS,
      node: { id: 'ztunnel~1.1.1.1~z.istio-system~istio-system.svc.cluster.local' },
    });
    const all = await first.next();
    // The pods, and the API server's own `kubernetes` Service with its endpoint, which istiod serves as it would
    // on a cluster.
    assert.deepEqual(all.resources.map((r) => r.name).sort(), [
      'Kubernetes//Pod/ns/p0',
      'Kubernetes//Pod/ns/p1',
      'Kubernetes//Pod/ns/p2',
      'Kubernetes/discovery.k8s.io/EndpointSlice/default/kubernetes/127.0.0.1',
      'default/kubernetes.default.svc.cluster.local',
    ]);
    first.stream.write({ typeUrl: ADDRESS, responseNonce: all.nonce });
    const held = Object.fromEntries(all.resources.map((r) => [r.name, r.version]));
    first.stream.end();

    const again = openStream(ist, root, token);
    again.stream.write({ typeUrl: ADDRESS, initialResourceVersions: held });
    const none = await again.next();
    assert.deepEqual(none.resources, [], 'nothing re-sent');
    assert.deepEqual(none.removedResources, []);
    again.stream.end();

    const stale = openStream(ist, root, token);
    stale.stream.write({
      typeUrl: ADDRESS,
      initialResourceVersions: { ...held, 'Kubernetes//Pod/ns/p0': 'old', 'Kubernetes//Pod/ns/gone': 'x' },
    });
    const diff = await stale.next();
    assert.deepEqual(
      diff.resources.map((r) => r.name),
      ['Kubernetes//Pod/ns/p0'],
    );
    assert.deepEqual(diff.removedResources, ['Kubernetes//Pod/ns/gone']);
    stale.stream.end();
  });

  test('pushes carry only what changed, and removals by name; a NACK is recorded per connection', async () => {
    const s = openStream(ist, root, token);
    s.stream.write({ typeUrl: ADDRESS });
    const initial = await s.next();
    s.stream.write({ typeUrl: ADDRESS, responseNonce: initial.nonce });
    s.stream.write({ typeUrl: AUTHZ });
    const authz = await s.next();
    s.stream.write({
      typeUrl: AUTHZ,
      responseNonce: authz.nonce,
      errorDetail: { code: 3, message: 'ns/p: rejected for the test' },
    });
    await writeFile(path.join(dir, 'config', '.tmp'), PODS(2));
    await rename(path.join(dir, 'config', '.tmp'), path.join(dir, 'config', 'pods.yaml'));
    const push = await s.next();
    assert.equal(push.typeUrl, ADDRESS);
    assert.deepEqual(push.resources, []);
    assert.deepEqual(push.removedResources, ['Kubernetes//Pod/ns/p2']);
    const debug = (await (await fetch(`http://127.0.0.1:${ist.ports.monitoring}/debug/connections`)).json()) as {
      types: Record<string, { lastNack?: string }>;
    }[];
    assert.ok(
      debug.some((c) => c.types[AUTHZ]?.lastNack === 'ns/p: rejected for the test'),
      JSON.stringify(debug),
    );
    s.stream.end();
  });

  test('a stream without a valid Bearer token is refused with UNAUTHENTICATED', async () => {
    const s = openStream(ist, root, 'not-a-jwt');
    s.stream.write({ typeUrl: ADDRESS });
    const err = await new Promise<grpc.ServiceError>((r) => s.stream.once('error', r));
    assert.equal(err.code, grpc.status.UNAUTHENTICATED);
  });
});

test('ztunnel NACKs a resource it cannot take by name, and applies the rest of the response', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-nack-'));
  // A control plane of our own making, so it can send what istiod never would.
  const { CertificateAuthority, writePluginCaDir, issueServingCertificate } =
    await import('../src/lib/pki/certificate-authority.js');
  await writePluginCaDir(path.join(dir, 'ca'));
  const ca = await CertificateAuthority.fromPluginDir(path.join(dir, 'ca'));
  const serving = await issueServingCertificate(ca, ['istiod.istio-system.svc'], 3600);
  const nacks: DeltaDiscoveryRequest[] = [];
  const server = new grpc.Server();
  server.addService(grpcServiceDefinition(AggregatedDiscoveryService), {
    deltaAggregatedResources: (call: grpc.ServerDuplexStream<DeltaDiscoveryRequest, object>) => {
      call.on('data', (req: DeltaDiscoveryRequest) => {
        if (req.responseNonce !== '') {
          if (req.errorDetail !== undefined) nacks.push(req);
          return;
        }
        const wl = (uid: string, ip: number[], proto: TunnelProtocol) => ({
          name: uid,
          version: '1',
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
        call.write({
          typeUrl: req.typeUrl,
          nonce: `n-${req.typeUrl.length}`,
          resources:
            req.typeUrl === ADDRESS
              ? [
                  wl('good', [127, 0, 75, 1], TunnelProtocol.HBONE),
                  wl('legacy', [127, 0, 75, 2], TunnelProtocol.LEGACY_ISTIO_MTLS),
                ]
              : [],
        });
      });
      call.on('end', () => call.end());
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      '127.0.0.1:0',
      grpc.ServerCredentials.createSsl(null, [
        { private_key: Buffer.from(serving.keyPem), cert_chain: Buffer.from(serving.chain.slice(0, -1).join('')) },
      ]),
      (e, p) => (e === null ? resolve(p) : reject(e)),
    ),
  );
  await writeFile(path.join(dir, 'root.pem'), ca.rootBundlePem);
  await writeFile(path.join(dir, 'token'), 'opaque-token');
  const zt = await startZtunnel('', 'n1', path.join(dir, 'ca'), {
    XDS_ADDRESS: `https://127.0.0.1:${port}`,
    ALT_XDS_HOSTNAME: 'istiod.istio-system.svc',
    XDS_ROOT_CA: path.join(dir, 'root.pem'),
    AUTH_TOKEN: path.join(dir, 'token'),
  });
  try {
    await waitFor('NACK', () => nacks.length > 0);
    assert.equal(nacks[0]!.typeUrl, ADDRESS);
    assert.match(nacks[0]!.errorDetail!.message, /^legacy: .*legacy istio mtls/);
    assert.ok(zt.ctx.state.workloadByUid('good') !== undefined, 'the good resource in the same response is applied');
    assert.equal(zt.ctx.state.workloadByUid('legacy'), undefined);
  } finally {
    await zt.shutdown();
    server.forceShutdown();
    await rm(dir, { recursive: true, force: true });
  }
});
