/**
 * `amesh up`'s two steps taken apart, as a user takes kind's and istioctl's: a bare cluster (`amesh up --dataplane
 * none`: no istiod, no node agent), then `amesh install --set profile=ambient` against its kubeconfig, then the
 * demo's workloads (examples/mesh) written into its config dir: web's request to the echo Service is captured and
 * carried over HBONE with both SPIFFE identities verified. `amesh uninstall --purge` then leaves istio-system and
 * the cluster without the install's objects.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ameshCommand } from '../src/up/amesh-command.js';
import { packageRoot } from '../src/lib/package-root.js';
import {
  amesh,
  kubectlIn,
  launchUp,
  removeCluster,
  upSkip,
  UP_DEADLINE_MS,
  type LaunchedUp,
  type RunResult,
} from './helpers/amesh-up.js';
import { waitFor } from './helpers/mesh-fixture.js';
import { TestNetns } from './helpers/netns.js';
import { runToExit } from './helpers/run-to-exit.js';

const EXAMPLE = path.join(packageRoot(), 'examples', 'mesh');
const INSTALL_MS = 300_000;
const TRAFFIC_MS = 120_000;

describe('amesh up --dataplane none, then amesh install --set profile=ambient on it', { skip: upSkip }, () => {
  const id = randomBytes(3).toString('hex');
  let host: TestNetns;
  let dir: string;
  let dataDir: string;
  let manifests: string;
  let launched: LaunchedUp | undefined;
  const kubectl = (...args: string[]): Promise<RunResult> => kubectlIn(host, dataDir, ...args);
  /** `amesh <args> --kubeconfig <up's>`, from the host's namespace, as a user runs it beside `up`. */
  const ameshOnCluster = (...args: string[]): Promise<RunResult> => {
    const { cmd, args: pre } = ameshCommand();
    return runToExit(
      'nsenter',
      [`--net=${host.path}`, '--', cmd, ...pre, ...args, '--kubeconfig', path.join(dataDir, 'kubeconfig')],
      INSTALL_MS,
    );
  };
  const names = async (kind: string, ...flags: string[]): Promise<string[]> =>
    (await kubectl('get', kind, ...flags, '-o', 'name')).stdout.split('\n').filter((l) => l !== '');

  before(async () => {
    host = await TestNetns.create();
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-up-install-'));
    dataDir = path.join(dir, 'data');
    manifests = path.join(dir, 'manifests');
    await mkdir(manifests);
    for (const f of ['namespaces.yaml', 'nodes.yaml']) await copyFile(path.join(EXAMPLE, f), path.join(manifests, f));
    launched = launchUp(host, [
      '--config-dir',
      manifests,
      '--data-dir',
      dataDir,
      '--name',
      `i${id}`,
      '--nodes',
      '2',
      '--dataplane',
      'none',
    ]);
    await launched.ready;
  });
  after(async () => {
    await removeCluster(launched, host, dataDir);
    await host.remove();
    await rm(dir, { recursive: true, force: true });
  });

  test('the bare cluster has no istiod, node agent or ztunnel, and no Istio CRDs', async () => {
    assert.deepEqual(await names('pods', '-n', 'istio-system'), []);
    assert.doesNotMatch(launched!.stderr(), /Installing Istio/);
    assert.deepEqual(
      (await names('crd')).filter((n) => n.endsWith('.istio.io')),
      [],
    );
  });

  test(
    "install, then the demo's traffic is captured and mutually authenticated; uninstall --purge leaves nothing of it",
    { timeout: UP_DEADLINE_MS + INSTALL_MS + TRAFFIC_MS },
    async () => {
      const install = await ameshOnCluster('install', '-y', '--set', 'profile=ambient');
      assert.equal(install.status, 0, install.stdout + install.stderr);
      for (const line of ['✔ Istio core installed', '✔ Istiod installed', '✔ CNI installed', '✔ Ztunnel installed'])
        assert.ok(install.stdout.includes(line), `${line} in:\n${install.stdout}`);

      assert.deepEqual((await names('validatingwebhookconfigurations')).sort(), [
        'validatingwebhookconfiguration.admissionregistration.k8s.io/istio-validator-istio-system',
        'validatingwebhookconfiguration.admissionregistration.k8s.io/istiod-default-validator',
      ]);
      // An unlabelled policy is checked by the default revision's validator, once istiod made it fail closed.
      const bad = path.join(dir, 'bad-policy.yaml');
      await writeFile(
        bad,
        'apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: bad, namespace: backend}\nspec: {action: DENY, rules: [{to: [{operation: {ports: [abc]}}]}]}\n',
      );
      let refused: RunResult | undefined;
      await waitFor(
        "kubectl apply of an invalid policy refused by istiod's webhook",
        async () => {
          refused = await kubectl('apply', '-f', bad);
          if (refused.status === 0) await kubectl('delete', '-f', bad);
          return refused.status !== 0;
        },
        TRAFFIC_MS,
      );
      assert.match(refused?.stderr ?? '', /admission webhook "validation\.istio\.io" denied the request/);

      for (const f of ['workloads.yaml', 'policies.yaml'])
        await copyFile(path.join(EXAMPLE, f), path.join(manifests, f));
      let answer = '';
      await waitFor(
        'web reaches the echo Service through the mesh',
        async () => {
          const r = await amesh(
            host,
            'exec',
            '--data-dir',
            dataDir,
            'frontend/web',
            '--',
            'curl',
            '-sS',
            '-m',
            '5',
            'http://echo.backend/',
          );
          answer = r.stdout;
          return r.status === 0 && answer.includes('"hostname":"echo-');
        },
        TRAFFIC_MS,
      );
      const ztunnel = (
        await kubectl(
          'get',
          'pods',
          '-n',
          'istio-system',
          '-l',
          'app=ztunnel',
          '--field-selector',
          'spec.nodeName=node1',
          '-o',
          'jsonpath={.items[0].metadata.name}',
        )
      ).stdout;
      await waitFor(
        "web's ztunnel logged the connection with both identities",
        async () =>
          /connection complete.*src\.identity=spiffe:\/\/cluster\.local\/ns\/frontend\/sa\/web .*dst\.identity=spiffe:\/\/cluster\.local\/ns\/backend\/sa\/echo direction=outbound/.test(
            (await amesh(host, 'logs', '--data-dir', dataDir, `istio-system/${ztunnel}`)).stdout,
          ),
        TRAFFIC_MS,
      );

      const uninstall = await ameshOnCluster('uninstall', '--purge', '-y');
      assert.equal(uninstall.status, 0, uninstall.stdout + uninstall.stderr);
      await waitFor(
        "istio-system without the install's pods",
        async () => (await names('pods', '-n', 'istio-system')).length === 0,
        TRAFFIC_MS,
      );
      for (const kind of ['deployments', 'daemonsets', 'serviceaccounts', 'configmaps', 'services'])
        assert.deepEqual(
          await names(kind, '-n', 'istio-system', '-l', 'operator.istio.io/component'),
          [],
          `${kind} of the install`,
        );
      assert.deepEqual(await names('validatingwebhookconfigurations'), []);
      assert.deepEqual(
        (await names('crd')).filter((n) => n.endsWith('.istio.io')),
        [],
      );
      assert.deepEqual(await names('clusterroles', '-l', 'app.kubernetes.io/part-of=istio'), []);
    },
  );
});
