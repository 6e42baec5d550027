import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { once } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import { anyPack } from '@bufbuild/protobuf/wkt';
import { Registry as MetricsRegistry } from 'prom-client';
import {
  AggregatedDiscoveryService,
  type DeltaDiscoveryResponse,
} from '../../api/envoy/service/discovery/v3/discovery_pb.js';
import { AddressSchema } from '../../api/istio/workload/workload_pb.js';
import { grpcServiceDefinition } from '../../lib/grpc-service.js';
import { makeTypedClient, type TypedClient } from '../../lib/grpc-typed-client.js';
import { LogControl } from '../../lib/log.js';
import { Authenticator } from '../ca/authenticate.js';
import { LocalIssuer } from '../ca/local-issuer.js';
import { AdsServer, type Snapshot } from './ads-server.js';
import { ADDRESS_TYPE, type XdsResource } from './convert.js';
import { WAYPOINT_TYPE } from './waypoint-resource.js';
import { SECRET_TYPE, type CallerGenerator } from './secret-generator.js';

type AdsClient = TypedClient<typeof AggregatedDiscoveryService>;
type ClientStream = ReturnType<AdsClient['deltaAggregatedResources']>;

/** An Address resource of about `size` bytes; `version` tells the client which update it came from. */
function resource(name: string, version: string, size = 64): XdsResource {
  const wl = create(AddressSchema, {
    type: { case: 'workload', value: { uid: name, name, namespace: 'ns', workloadName: 'x'.repeat(size) } },
  });
  return { name, version, resource: anyPack(AddressSchema, wl) };
}

/**
 * A per-caller type whose authorizations are answered by the test, in the order it chooses: each call waits in
 * `pending` until resolved with the names it allows.
 */
class HeldGenerator implements CallerGenerator {
  readonly pending: { asked: readonly string[]; resolve: (allowed: string[]) => void }[] = [];
  authorize(_caller: unknown, _conn: string, names: readonly string[]): Promise<string[]> {
    return new Promise((resolve) => this.pending.push({ asked: names, resolve }));
  }
  resource(_caller: unknown, name: string): XdsResource {
    return { ...resource(name, '1'), name };
  }
}

function snapshot(resources: XdsResource[]): Snapshot {
  return new Map([[ADDRESS_TYPE, new Map(resources.map((r) => [r.name, r]))]]);
}

describe('istiod delta ADS server, per connection', () => {
  let dir: string;
  let server: grpc.Server;
  let ads: AdsServer;
  let metrics: MetricsRegistry;
  let client: AdsClient;
  let token: string;
  const generated = new HeldGenerator();

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-ads-'));
    const issuer = await LocalIssuer.loadOrCreate(dir);
    token = await issuer.issue({
      namespace: 'istio-system',
      serviceAccount: 'ztunnel',
      audience: 'istio-ca',
      node: 'n1',
    });
    metrics = new MetricsRegistry();
    const logs = new LogControl({
      format: 'json',
      level: 'silent',
      component: 'istiod',
      out: new Writable({ write: (_c, _e, cb) => cb() }),
    });
    ads = new AdsServer(
      new Authenticator([], issuer.publicJwk, ['istio-ca']),
      metrics,
      logs.scope('ads'),
      new Map([[SECRET_TYPE, generated]]),
    );
    server = new grpc.Server();
    server.addService(grpcServiceDefinition(AggregatedDiscoveryService), ads.handlers);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
        e === null ? resolve(p) : reject(e),
      ),
    );
    client = makeTypedClient(AggregatedDiscoveryService, `127.0.0.1:${port}`, grpc.credentials.createInsecure());
  });
  after(async () => {
    client.close();
    server.forceShutdown();
    await rm(dir, { recursive: true, force: true });
  });

  function open(): ClientStream {
    const md = new grpc.Metadata();
    md.set('authorization', `Bearer ${token}`);
    const s = client.deltaAggregatedResources(md);
    s.on('error', () => undefined);
    return s;
  }

  async function pushes(): Promise<number> {
    const m = await metrics.getSingleMetric('pilot_xds_pushes')?.get();
    return m?.values.reduce((n, v) => n + v.value, 0) ?? 0;
  }

  test('a client that stops reading is not queued a push per change: what changed meanwhile arrives as one diff', async () => {
    ads.update(snapshot([resource('a', '0'), resource('b', '0')]));
    const s = open();
    s.write({ typeUrl: ADDRESS_TYPE });
    const [first] = (await once(s, 'data')) as [DeltaDiscoveryResponse];
    assert.equal(first.resources.length, 2);
    s.write({ typeUrl: ADDRESS_TYPE, responseNonce: first.nonce });
    s.pause();
    const before = await pushes();
    const UPDATES = 400;
    for (let i = 1; i <= UPDATES; i++) ads.update(snapshot([resource('a', String(i), 4096), resource('b', '0')]));
    const written = (await pushes()) - before;
    assert.ok(written < UPDATES / 4, `${written} pushes were written to a stream nobody reads (of ${UPDATES} changes)`);

    // Once the client reads again it gets the latest version of `a`, and nothing about `b`, which never changed.
    const seen: DeltaDiscoveryResponse[] = [];
    await new Promise<void>((resolve) => {
      s.on('data', (r: DeltaDiscoveryResponse) => {
        seen.push(r);
        if (r.resources.some((x) => x.version === String(UPDATES))) resolve();
      });
      s.resume();
    });
    s.removeAllListeners('data');
    s.cancel();
    assert.ok(seen.every((r) => r.resources.every((x) => x.name === 'a')));
    assert.equal(
      seen.length,
      written + 1,
      'what was written, then one diff with the latest version once the stream drained',
    );
  });

  test(
    'a client re-subscribing in a loop on one stream is answered once (istiod delta.go shouldRespondDelta)',
    { timeout: 10_000 },
    async () => {
      ads.update(snapshot([resource('a', '1'), resource('b', '1')]));
      const s = open();
      const got: DeltaDiscoveryResponse[] = [];
      s.on('data', (r: DeltaDiscoveryResponse) => got.push(r));
      for (let i = 0; i < 50; i++) s.write({ typeUrl: ADDRESS_TYPE });
      // A named subscription on the same stream is answered with just that name; it also orders the stream:
      // its answer comes after any answer to the loop above.
      s.write({ typeUrl: ADDRESS_TYPE, resourceNamesSubscribe: ['b', 'missing'] });
      await new Promise<void>((resolve) => {
        s.on('data', (r: DeltaDiscoveryResponse) => {
          if (r.removedResources.includes('missing')) resolve();
        });
      });
      assert.equal(
        got.length,
        2,
        got.map((r) => JSON.stringify({ n: r.resources.map((x) => x.name), rm: r.removedResources })).join(' '),
      );
      assert.deepEqual(got[0]!.resources.map((r) => r.name).sort(), ['a', 'b']);
      assert.deepEqual(
        got[1]!.resources.map((r) => r.name),
        ['b'],
      );
      assert.deepEqual(got[1]!.removedResources, ['missing']);
      s.cancel();
    },
  );

  test(
    'a waypoint resource is served only by name, and only to a caller of its namespace',
    { timeout: 10_000 },
    async () => {
      const waypoints = (versions: Record<string, string>): Snapshot =>
        new Map([
          [ADDRESS_TYPE, new Map()],
          [WAYPOINT_TYPE, new Map(Object.entries(versions).map(([n, v]) => [n, { ...resource(n, v), name: n }]))],
        ]);
      ads.update(waypoints({ 'istio-system/wp': '1', 'istio-system/other': '1', 'shop/wp': '1' }));
      const s = open();
      const got: DeltaDiscoveryResponse[] = [];
      const next = (): Promise<DeltaDiscoveryResponse> =>
        new Promise((resolve) => s.once('data', (r: DeltaDiscoveryResponse) => resolve(r)));
      s.on('data', (r: DeltaDiscoveryResponse) => got.push(r));
      let answer = next();
      // The caller's token is for istio-system: the shop name is refused, and nothing is sent it did not name.
      s.write({ typeUrl: WAYPOINT_TYPE, resourceNamesSubscribe: ['istio-system/wp', 'shop/wp'] });
      let r = await answer;
      assert.deepEqual(
        r.resources.map((x) => x.name),
        ['istio-system/wp'],
      );
      s.write({ typeUrl: WAYPOINT_TYPE, responseNonce: r.nonce });
      answer = next();
      ads.update(
        waypoints({ 'istio-system/wp': '2', 'istio-system/other': '2', 'shop/wp': '2' }),
        new Map([[WAYPOINT_TYPE, new Set(['istio-system/wp', 'istio-system/other', 'shop/wp'])]]),
      );
      r = await answer;
      assert.deepEqual(
        r.resources.map((x) => [x.name, x.version]),
        [['istio-system/wp', '2']],
      );
      answer = next();
      s.write({ typeUrl: WAYPOINT_TYPE, resourceNamesUnsubscribe: ['istio-system/wp'] });
      r = await answer;
      assert.deepEqual(r.removedResources, ['istio-system/wp']);
      assert.ok(got.every((x) => x.resources.every((y) => y.name === 'istio-system/wp')));
      s.cancel();
    },
  );

  test(
    'a per-caller type (SDS): an authorization answered after a newer one is dropped, so a name allowed later is not taken back',
    { timeout: 10_000 },
    async () => {
      ads.update(snapshot([]));
      const s = open();
      const next = (): Promise<DeltaDiscoveryResponse> =>
        new Promise((resolve) => s.once('data', (r: DeltaDiscoveryResponse) => resolve(r)));
      const asked = async (n: number): Promise<void> => {
        while (generated.pending.length < n) await new Promise((r) => setImmediate(r));
      };
      s.write({ typeUrl: SECRET_TYPE });
      await asked(1);
      // A model change re-authorizes what the stream asked for (nothing yet) while the first answer is out.
      ads.update(snapshot([]));
      await asked(2);
      s.write({ typeUrl: SECRET_TYPE, resourceNamesSubscribe: ['kubernetes-gateway://ns/cert'] });
      await asked(3);
      const [first, second, third] = generated.pending as [
        HeldGenerator['pending'][number],
        HeldGenerator['pending'][number],
        HeldGenerator['pending'][number],
      ];
      assert.deepEqual(third.asked, ['kubernetes-gateway://ns/cert']);
      const answer = next();
      third.resolve(['kubernetes-gateway://ns/cert']);
      const r = await answer;
      assert.deepEqual(
        r.resources.map((x) => x.name),
        ['kubernetes-gateway://ns/cert'],
      );
      s.write({ typeUrl: SECRET_TYPE, responseNonce: r.nonce });
      const seen: DeltaDiscoveryResponse[] = [];
      s.on('data', (x: DeltaDiscoveryResponse) => seen.push(x));
      first.resolve([]);
      second.resolve([]);
      // Had the stale answers (nothing allowed) been applied, a removal of the certificate would come before this.
      generated.pending.length = 0;
      const last = next();
      s.write({ typeUrl: SECRET_TYPE, resourceNamesSubscribe: ['kubernetes-gateway://ns/other'] });
      await asked(1);
      generated.pending[0]!.resolve(['kubernetes-gateway://ns/cert', 'kubernetes-gateway://ns/other']);
      await last;
      assert.deepEqual(
        seen.map((x) => [x.resources.map((y) => y.name), x.removedResources]),
        [[['kubernetes-gateway://ns/other'], []]],
        'the certificate was never withdrawn',
      );
      s.cancel();
    },
  );
});
