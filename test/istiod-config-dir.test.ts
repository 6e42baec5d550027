/**
 * `amesh istiod --config-dir` through its embedded API server: kubectl sees what the directory applied, a policy
 * the API refuses stands in fail-closed until the API takes it, and a restart with an edited directory prunes what
 * left it while keeping what was created through the API by hand.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { toJson } from '@bufbuild/protobuf';
import type { DeltaDiscoveryResponse } from '../src/api/envoy/service/discovery/v3/discovery_pb.js';
import { AuthorizationSchema } from '../src/api/istio/security/authorization_pb.js';
import type { Istiod } from '../src/istiod/istiod.js';
import { startIstiod } from './helpers/in-process.js';
import { openStream } from './helpers/ads-stream.js';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { namespaces, pod } from './helpers/manifests.js';
import { waitFor } from './helpers/mesh-fixture.js';

const AUTHZ = 'type.googleapis.com/istio.security.Authorization';
const HOST = '127.94.0.1';
/** An ALLOW policy in the root namespace, which the directory forgot to create: the API refuses it (404). */
const ROOT_ALLOW =
  '---\n{apiVersion: security.istio.io/v1, kind: AuthorizationPolicy, metadata: {name: allow-nothing-else, namespace: istio-system}, spec: {action: ALLOW, rules: [{from: [{source: {principals: [cluster.local/ns/frontend/sa/web]}}]}]}}\n';
const BASE =
  namespaces('frontend') +
  pod({ name: 'web-0', namespace: 'frontend', serviceAccount: 'web', node: 'n1', ip: '127.94.0.10' });

/** A push that never comes fails the test instead of hanging the suite. */
const TEST_TIMEOUT_MS = 20_000;

describe('istiod --config-dir through its embedded API server', { timeout: TEST_TIMEOUT_MS * 5 }, () => {
  let dir: string;
  let ist: Istiod;
  const { kubectl, ok } = kubectlWith(() => ist.kubeconfigPath ?? '');

  const write = async (text: string): Promise<void> => {
    await writeFile(path.join(dir, '.m.tmp'), text);
    await rename(path.join(dir, '.m.tmp'), path.join(dir, 'config', 'mesh.yaml'));
  };
  /** Subscribes to Authorization and returns the first response, decoded, with a way to read the next ones. */
  const subscribe = async (): Promise<{
    first: Record<string, Record<string, unknown>>;
    next: () => Promise<DeltaDiscoveryResponse>;
    close: () => void;
  }> => {
    const token = await ist.issuer.issue({
      namespace: 'istio-system',
      serviceAccount: 'ztunnel',
      audience: 'istio-ca',
      node: 'n1',
    });
    const s = openStream(ist, await readFile(ist.rootCertPath, 'utf8'), token, HOST);
    const next = async (): Promise<DeltaDiscoveryResponse> => {
      const r = await s.next();
      s.stream.write({ typeUrl: r.typeUrl, responseNonce: r.nonce });
      return r;
    };
    s.stream.write({ typeUrl: AUTHZ });
    return { first: decode(await next()), next, close: () => s.stream.end() };
  };

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-config-dir-'));
    await mkdir(path.join(dir, 'config'));
    await write(BASE + ROOT_ALLOW);
    ist = await startIstiod(path.join(dir, 'config'), path.join(dir, 'state'), { host: HOST });
  });
  after(async () => {
    await ist.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test(
    'a policy the API refuses (its namespace missing) is served as deny-all in its scope until the API takes it',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const s = await subscribe();
      try {
        // In the root namespace without a selector the policy is mesh-wide, so its stand-in denies the whole mesh
        // (scope GLOBAL, the enum's zero value, which JSON leaves out).
        assert.deepEqual(s.first['istio-system/allow-nothing-else'], {
          name: 'allow-nothing-else',
          namespace: 'istio-system',
          action: 'DENY',
          rules: [{}],
        });
        await write(namespaces('istio-system') + BASE + ROOT_ALLOW);
        const taken = decode(await s.next());
        assert.equal(
          taken['istio-system/allow-nothing-else']?.['action'],
          undefined,
          'ALLOW, the default, once the API holds the real policy',
        );
        await write(namespaces('istio-system') + BASE);
        const removed = await s.next();
        assert.deepEqual(removed.removedResources, ['istio-system/allow-nothing-else']);
      } finally {
        s.close();
      }
    },
  );

  test(
    'a stand-in for a policy the API refused goes when its document leaves the directory',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const ghost =
        '---\n{apiVersion: security.istio.io/v1, kind: AuthorizationPolicy, metadata: {name: allow-ghost, namespace: ghost}, spec: {action: ALLOW, rules: [{}]}}\n';
      const s = await subscribe();
      try {
        await write(namespaces('istio-system') + BASE + ghost);
        const standIn = decode(await s.next());
        assert.equal(
          standIn['ghost/allow-ghost']?.['action'],
          'DENY',
          'namespace ghost does not exist, so the API refused it',
        );
        await write(namespaces('istio-system') + BASE);
        assert.deepEqual((await s.next()).removedResources, ['ghost/allow-ghost']);
      } finally {
        s.close();
      }
    },
  );

  test(
    'kubectl lists what the directory applied, sees the directory as an ApplySet, and finds istio-ca-root-cert in each namespace',
    { skip: kubectlSkip },
    async () => {
      const pods = await ok('get', 'pods', '-A', '-o', 'wide');
      assert.match(pods, /frontend +web-0 .* 127\.94\.0\.10 +n1/);
      const parent = JSON.parse(
        await ok('get', 'configmap', '-n', 'kube-system', 'amesh-config-dir', '-o', 'json'),
      ) as { metadata: { annotations: Record<string, string> } };
      assert.match(parent.metadata.annotations['applyset.kubernetes.io/contains-group-kinds'] ?? '', /\bPod\b/);
      // Published by istiod's namespace controller, which reconciles each namespace after its informers synced.
      const root = await readFile(ist.rootCertPath, 'utf8');
      await waitFor(
        'istio-ca-root-cert in frontend',
        async () =>
          (
            await kubectl(
              'get',
              'configmap',
              '-n',
              'frontend',
              'istio-ca-root-cert',
              '-o',
              'jsonpath={.data.root-cert\\.pem}',
            )
          ).stdout === root,
      );
    },
  );

  test(
    'after a restart with an edited directory, what left the directory is pruned and what kubectl created stays',
    { skip: kubectlSkip },
    async () => {
      await ok('create', 'configmap', 'by-hand', '-n', 'frontend', '--from-literal=k=v');
      await ist.stop();
      await writeFile(path.join(dir, 'config', 'mesh.yaml'), namespaces('istio-system', 'frontend'));
      ist = await startIstiod(path.join(dir, 'config'), path.join(dir, 'state'), { host: HOST });
      const pods = await ok('get', 'pods', '-n', 'frontend', '-o', 'name');
      assert.equal(pods.trim(), '', 'web-0 left the directory, so it was pruned');
      assert.equal(
        (await ok('get', 'configmap', 'by-hand', '-n', 'frontend', '-o', 'name')).trim(),
        'configmap/by-hand',
      );
    },
  );
});

function decode(r: DeltaDiscoveryResponse): Record<string, Record<string, unknown>> {
  return Object.fromEntries(
    r.resources.map((x) => [
      x.name,
      toJson(AuthorizationSchema, anyUnpack(x.resource!, AuthorizationSchema)!) as Record<string, unknown>,
    ]),
  );
}
