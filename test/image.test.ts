/**
 * The container image (`npm run image`, docs/image.md), run with podman as Kubernetes manifests run it: the command
 * and args given, no entrypoint. ztunnel and istiod start from it with a local config and answer their readiness
 * probes (Istio's 15021 /healthz/ready and 15014 /ready); the node agent's tools are on its PATH; the CNI plugin
 * module and the Node the agent installs into the host's CNI bin dir (src/cni/install/plugin-files.ts) run on the
 * host. The build is made once
 * per source tree (the script keeps an image built from the same inputs) and takes minutes the first time on a
 * machine (mmdebstrap, then cached).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { packageRoot } from '../src/lib/package-root.js';
import { VERSION } from '../src/lib/version.js';
import { meshFixture, waitFor, type MeshFixture } from './helpers/mesh-fixture.js';
import { printedLine } from './helpers/printed-line.js';
import { podmanSkipReason, podmanUlimits, runContainer } from './helpers/podman.js';
import { runToExit } from './helpers/run-to-exit.js';
import { TEST_DEADLINE_MS } from './helpers/deadlines.js';

/**
 * The first build on a machine runs mmdebstrap (minutes on a loaded machine); later ones take seconds. Below
 * scripts/run-tests.mjs's FILE_TIMEOUT_MS, so a slow build is stopped (and cleans up) and fails here, saying so.
 */
const BUILD_TIMEOUT_MS = 510_000;

const ZTUNNEL_IP = '127.121.0.1';
const ISTIOD_IP = '127.121.0.2';

const skip = podmanSkipReason();

/** Builds the image (`npm run image`) and resolves with its ID. */
async function buildImage(): Promise<string> {
  const child = spawn(process.execPath, ['scripts/build-image.mjs'], {
    cwd: packageRoot(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => {
    stderr += `(still building after ${BUILD_TIMEOUT_MS} ms: stopped)\n`;
    child.kill('SIGTERM');
  }, BUILD_TIMEOUT_MS);
  const status = await new Promise<number | null>((resolve) => child.once('close', resolve));
  clearTimeout(timer);
  assert.equal(status, 0, `npm run image failed:\n${stderr}`);
  return stdout.trim();
}

/** `podman run --rm` of the image with `command`, to completion. */
function runToCompletion(image: string, command: string[], flags: string[] = []) {
  return runToExit('podman', ['run', '--rm', ...podmanUlimits(), ...flags, image, ...command], TEST_DEADLINE_MS);
}

describe('the amesh image, run by podman', { skip }, () => {
  let image: string;
  let fx: MeshFixture;

  before(
    async () => {
      image = await buildImage();
      fx = await meshFixture();
    },
    // Room for a stopped build to clean up.
    { timeout: BUILD_TIMEOUT_MS + 30_000 },
  );

  after(() => fx?.cleanup());

  test('amesh version prints the package version; the image is labelled with it and has no entrypoint', async () => {
    const r = await runToCompletion(image, ['amesh', 'version']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^amesh ${VERSION.replaceAll('.', '\\.')} `));
    const inspect = spawnSync('podman', ['image', 'inspect', image], { encoding: 'utf8' });
    const [config] = JSON.parse(inspect.stdout) as {
      Config: { Labels: Record<string, string>; Entrypoint?: string[] };
    }[];
    assert.equal(config?.Config.Labels['org.opencontainers.image.version'], VERSION);
    assert.equal(config?.Config.Labels['org.opencontainers.image.title'], 'amesh');
    assert.deepEqual(config?.Config.Entrypoint ?? [], []);
  });

  test("the node agent's tools are on the PATH and the native addon loads", async () => {
    const tools = [
      'iptables-restore',
      'iptables-save',
      'ip6tables-restore',
      'ip6tables-save',
      'ip',
      'ipset',
      'nsenter',
    ];
    const r = await runToCompletion(image, [
      'sh',
      '-c',
      `for t in ${tools.join(' ')}; do command -v $t >/dev/null || echo "missing $t"; done; ` +
        `node -e 'require("/usr/lib/amesh/native/build/Release/amesh_native.node"); console.log("addon loaded")'`,
    ]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, 'addon loaded\n');
  });

  test('amesh ztunnel with a local config (no workload on its node) answers 15021 /healthz/ready and stops on SIGTERM', async (t) => {
    await fx.write('mesh.yaml', 'workloads: []\n');
    const zt = runContainer(`amesh-image-test-ztunnel-${process.pid}`, [
      '--network=host',
      `--volume=${fx.dir}:/config:ro`,
      '--env=NODE_NAME=node1',
      '--env=LOG_FORMAT=json',
      image,
      'amesh',
      'ztunnel',
      '--local-config=/config/mesh.yaml',
      '--local-ca=/config/ca',
      `--admin-address=${ZTUNNEL_IP}:15000`,
      `--metrics-address=${ZTUNNEL_IP}:15020`,
      `--readiness-address=${ZTUNNEL_IP}:15021`,
    ]);
    t.after(() => zt.stop());
    await printedLine(zt, 'ztunnel started', (l) => l['message'] === 'ztunnel started');
    await waitFor(
      'ztunnel ready',
      async () => (await fetch(`http://${ZTUNNEL_IP}:15021/healthz/ready`)).status === 200,
      TEST_DEADLINE_MS,
    );
    assert.equal(await zt.stop(), 0);
    assert.match(zt.output(), /"message":"ztunnel stopped"/);
  });

  test('amesh istiod with a config directory answers 15014 /ready and serves its metrics', async (t) => {
    const config = fx.file('istiod-config');
    await mkdir(config);
    await writeFile(
      path.join(config, 'namespace.yaml'),
      'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n  labels: {istio.io/dataplane-mode: ambient}\n',
    );
    const istiod = runContainer(`amesh-image-test-istiod-${process.pid}`, [
      '--network=host',
      `--volume=${config}:/config:ro`,
      '--env=LOG_FORMAT=json',
      image,
      'amesh',
      'istiod',
      '--config-dir=/config',
      '--state-dir=/var/lib/istiod',
      `--grpc-address=${ISTIOD_IP}:15012`,
      `--monitoring-address=${ISTIOD_IP}:15014`,
      `--webhook-address=${ISTIOD_IP}:15017`,
      `--apiserver-address=${ISTIOD_IP}:6443`,
    ]);
    t.after(() => istiod.stop());
    await printedLine(istiod, 'istiod started', (l) => l['message'] === 'istiod started');
    await waitFor(
      'istiod ready',
      async () => (await fetch(`http://${ISTIOD_IP}:15014/ready`)).status === 200,
      TEST_DEADLINE_MS,
    );
    assert.match(await (await fetch(`http://${ISTIOD_IP}:15014/metrics`)).text(), /istio_build\{component="pilot"/);
    assert.equal(await istiod.stop(), 0);
  });

  test('the CNI plugin module and Node the node agent installs from the image run on the host, outside any container, and answer VERSION', async () => {
    const hostBin = fx.file('cni-bin');
    await mkdir(hostBin);
    const copied = await runToCompletion(
      image,
      ['cp', '/usr/local/bin/node', '/usr/lib/amesh/dist/cni-plugin/amesh-cni.mjs', '/host/opt/cni/bin/'],
      [`--volume=${hostBin}:/host/opt/cni/bin`],
    );
    assert.equal(copied.status, 0, copied.stderr);
    const plugin = spawnSync(path.join(hostBin, 'node'), [path.join(hostBin, 'amesh-cni.mjs')], {
      input: JSON.stringify({ cniVersion: '1.0.0', name: 'k8s-pod-network', type: 'amesh-cni' }),
      env: { CNI_COMMAND: 'VERSION', PATH: '/nonexistent' },
      encoding: 'utf8',
    });
    assert.equal(plugin.status, 0, plugin.stderr);
    const answer = JSON.parse(plugin.stdout) as { cniVersion: string; supportedVersions: string[] };
    assert.equal(answer.cniVersion, '1.0.0');
    assert.ok(answer.supportedVersions.includes('1.1.0'), plugin.stdout);
  });
});
