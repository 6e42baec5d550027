/**
 * `amesh install`, `amesh uninstall` and `amesh manifest generate` (the CLI, as a child process) against the
 * embedded API server with the DaemonSet controller and the scheduler in this process, one node, and a stand-in
 * kubelet that reports the pods Ready when a test lets it: the install waits for readiness and fails naming what is
 * not ready after --readiness-timeout; a second install changes nothing (no resourceVersion moves); a new tag rolls
 * the DaemonSet; `uninstall --purge` leaves istio-system without the install's objects. The ingress gateway's
 * Deployment is waited for like istiod's, and `uninstall --revision` removes its objects. kubectl checks the ambient
 * and default manifests (the latter with the ingress gateway's objects) with a server-side dry run.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { DaemonSetController } from '../src/controllers/daemon-set-controller.js';
import { Scheduler } from '../src/controllers/scheduler.js';
import { ameshCommand } from '../src/up/amesh-command.js';
import { VERSION } from '../src/lib/version.js';
import { reportPods, startControllers, unready, type ControllerFixture } from './helpers/controller-fixture.js';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { waitFor } from './helpers/mesh-fixture.js';
import { runToExit } from './helpers/run-to-exit.js';

const NS = 'istio-system';
const DEADLINE_MS = 20_000;
/** The kinds the embedded API server does not serve yet, which every istiod or node-agent install renders. */
/** ztunnel alone: its ServiceAccount and DaemonSet, kinds the API server serves. */
const ZTUNNEL_ONLY = ['--set', 'profile=empty', '--set', 'components.ztunnel.enabled=true'];
/** The ingress gateway alone. */
const GATEWAY_ONLY = ['--set', 'profile=empty', '--set', 'components.ingressGateways[0].enabled=true'];

describe('amesh install against the embedded API server', () => {
  let fx: ControllerFixture;
  let dir: string;
  let kubelet: NodeJS.Timeout | undefined;
  const { ok } = kubectlWith(() => fx.api.kubeconfigPath);
  const run = (...args: string[]) => {
    const { cmd, args: base } = ameshCommand();
    return runToExit(cmd, [...base, ...args], 120_000);
  };
  const amesh = (...args: string[]) => run(...args, '--kubeconfig', fx.api.kubeconfigPath);
  const versions = async (): Promise<Record<string, string | undefined>> => ({
    daemonSet: (await fx.apps.readNamespacedDaemonSet({ name: 'ztunnel', namespace: NS })).metadata?.resourceVersion,
    serviceAccount: (await fx.core.readNamespacedServiceAccount({ name: 'ztunnel', namespace: NS })).metadata
      ?.resourceVersion,
    namespace: (await fx.core.readNamespace({ name: NS })).metadata?.resourceVersion,
  });
  const rbac = (): k8s.RbacAuthorizationV1Api => fx.kc.makeApiClient(k8s.RbacAuthorizationV1Api);
  const autoscaling = (): k8s.AutoscalingV2Api => fx.kc.makeApiClient(k8s.AutoscalingV2Api);
  /** The objects in istio-system an install labels with its component. */
  const installed = async (): Promise<string[]> => {
    const selector = { namespace: NS, labelSelector: 'operator.istio.io/component' };
    return [
      ...(await fx.apps.listNamespacedDaemonSet(selector)).items.map((o) => `DaemonSet/${o.metadata?.name ?? ''}`),
      ...(await fx.apps.listNamespacedDeployment(selector)).items.map((o) => `Deployment/${o.metadata?.name ?? ''}`),
      ...(await fx.core.listNamespacedServiceAccount(selector)).items.map(
        (o) => `ServiceAccount/${o.metadata?.name ?? ''}`,
      ),
      ...(await fx.core.listNamespacedConfigMap(selector)).items.map((o) => `ConfigMap/${o.metadata?.name ?? ''}`),
      ...(await fx.core.listNamespacedService(selector)).items.map((o) => `Service/${o.metadata?.name ?? ''}`),
      ...(await rbac().listNamespacedRole(selector)).items.map((o) => `Role/${o.metadata?.name ?? ''}`),
      ...(await rbac().listNamespacedRoleBinding(selector)).items.map((o) => `RoleBinding/${o.metadata?.name ?? ''}`),
      ...(await autoscaling().listNamespacedHorizontalPodAutoscaler(selector)).items.map(
        (o) => `HorizontalPodAutoscaler/${o.metadata?.name ?? ''}`,
      ),
    ];
  };

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-install-'));
    fx = await startControllers('install', (kc, informers, logs) => [
      new DaemonSetController(kc, informers, logs.scope('daemonset')),
      new Scheduler(kc, informers, logs.scope('scheduler')),
    ]);
    await fx.core.createNode({
      body: {
        metadata: { name: 'node1', labels: { 'kubernetes.io/hostname': 'node1', 'kubernetes.io/os': 'linux' } },
        status: { conditions: [{ type: 'Ready', status: 'True' }] },
      },
    });
  });
  after(async () => {
    if (kubelet !== undefined) clearInterval(kubelet);
    await fx.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('a DaemonSet whose pods never become ready fails the install after --readiness-timeout, naming it', async () => {
    const r = await amesh('install', '-y', '--readiness-timeout', '2s', ...ZTUNNEL_ONLY);
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(
      r.stderr,
      /INSTALL_ERR_NOT_READY: failed to install manifests: resources not ready after 2s:\n {2}DaemonSet\/istio-system\/ztunnel/,
    );
    assert.match(r.stdout, /^- Processing resources for Ztunnel\. Waiting for DaemonSet\/istio-system\/ztunnel$/m);
    assert.match(r.stdout, /^✘ Ztunnel encountered an error: resources not ready after 2s:/m);
  });

  test('once its pods are ready ztunnel is installed; a second install changes nothing; a new tag rolls it; uninstall --purge removes it', async () => {
    kubelet = setInterval(() => {
      void fx.core
        .listNamespacedPod({ namespace: NS })
        .then((l) =>
          reportPods(
            fx.core,
            unready(l.items).filter((p) => p.spec?.nodeName !== undefined),
          ),
        )
        .catch(() => undefined);
    }, 50);
    const first = await amesh('install', '-y', ...ZTUNNEL_ONLY);
    assert.equal(first.status, 0, first.stdout + first.stderr);
    assert.match(first.stdout, /^✔ Ztunnel installed 🔒$/m);
    assert.match(first.stdout, /^✔ Installation complete$/m);
    const ds = await fx.apps.readNamespacedDaemonSet({ name: 'ztunnel', namespace: NS });
    assert.equal(ds.spec?.template.spec?.containers[0]?.image, `localhost/amesh:${VERSION}`);
    assert.equal(ds.metadata?.labels?.['operator.istio.io/component'], 'Ztunnel');
    assert.equal(ds.metadata?.labels?.['operator.istio.io/managed'], 'Reconcile');
    assert.equal(ds.metadata?.labels?.['istio.io/rev'], 'default');

    const before = await versions();
    const second = await amesh('install', '-y', ...ZTUNNEL_ONLY);
    assert.equal(second.status, 0, second.stdout + second.stderr);
    assert.deepEqual(await versions(), before, 'nothing was written');
    const dryRun = await amesh('install', '--dry-run', ...ZTUNNEL_ONLY, '--set', 'tag=2.0.0');
    assert.equal(dryRun.status, 0, dryRun.stdout + dryRun.stderr);
    assert.match(dryRun.stdout, /^ {2}would be updated: DaemonSet\/istio-system\/ztunnel$/m);
    assert.match(dryRun.stdout, /^ {2}unchanged: ServiceAccount\/istio-system\/ztunnel$/m);
    assert.deepEqual(await versions(), before, 'a dry run writes nothing');

    const upgrade = await amesh('install', '-y', ...ZTUNNEL_ONLY, '--set', 'tag=2.0.0');
    assert.equal(upgrade.status, 0, upgrade.stdout + upgrade.stderr);
    const after = await versions();
    assert.notEqual(after['daemonSet'], before['daemonSet']);
    assert.equal(after['serviceAccount'], before['serviceAccount']);
    await waitFor(
      'the DaemonSet rolled to the new image',
      async () => {
        const pods = (await fx.core.listNamespacedPod({ namespace: NS })).items;
        return pods.length === 1 && pods[0]?.spec?.containers[0]?.image === 'localhost/amesh:2.0.0';
      },
      DEADLINE_MS,
    );

    const removed = await amesh('uninstall', '--purge', '-y');
    assert.equal(removed.status, 0, removed.stdout + removed.stderr);
    assert.match(removed.stdout, /^ {2}Removed apps\/v1, Kind=DaemonSet\/ztunnel\.istio-system\.$/m);
    assert.match(removed.stdout, /^ {2}Removed \/v1, Kind=ServiceAccount\/ztunnel\.istio-system\.$/m);
    assert.match(removed.stdout, /^✔ Uninstall complete$/m);
    await waitFor(
      'istio-system holds none of the install’s objects',
      async () => (await installed()).length === 0,
      DEADLINE_MS,
    );
  });

  test('an install that no longer renders an object prunes it; uninstall of the revision removes the rest', async () => {
    const first = await amesh('install', '-y', ...ZTUNNEL_ONLY);
    assert.equal(first.status, 0, first.stdout + first.stderr);
    const renamed = await amesh('install', '-y', ...ZTUNNEL_ONLY, '--set', 'values.ztunnel.resourceName=ztunnel-next');
    assert.equal(renamed.status, 0, renamed.stdout + renamed.stderr);
    await waitFor(
      'only ztunnel-next is left',
      async () =>
        JSON.stringify((await installed()).sort()) ===
        JSON.stringify(['DaemonSet/ztunnel-next', 'ServiceAccount/ztunnel-next']),
      DEADLINE_MS,
    );
    const removed = await amesh('uninstall', '--revision', 'default', '-y');
    assert.equal(removed.status, 0, removed.stdout + removed.stderr);
    assert.match(removed.stdout, /^ {2}Removed apps\/v1, Kind=DaemonSet\/ztunnel-next\.istio-system\.$/m);
    await waitFor(
      'istio-system holds none of the install’s objects',
      async () => (await installed()).length === 0,
      DEADLINE_MS,
    );
    const again = await amesh('uninstall', '--revision', 'default', '-y');
    assert.match(
      again.stdout,
      /^No resources will be pruned from the cluster\. Please double check the input configs$/m,
    );
  });

  test('the ingress gateway’s Deployment is waited for like istiod’s; a dry run finds it unchanged; an install without it prunes it; uninstall --revision removes its objects', async () => {
    const r = await amesh('install', '-y', '--readiness-timeout', '2s', ...GATEWAY_ONLY);
    // Without the deployment controller the gateway's Deployment never has a ReplicaSet: the install ends waiting.
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(
      r.stderr,
      /INSTALL_ERR_NOT_READY: failed to install manifests: resources not ready after 2s:\n {2}Deployment\/istio-system\/istio-ingressgateway/,
    );
    assert.match(
      r.stdout,
      /^- Processing resources for Ingress gateways\. Waiting for Deployment\/istio-system\/istio-ingressgateway$/m,
    );
    assert.match(r.stdout, /^✘ Ingress gateways encountered an error: resources not ready after 2s:/m);
    assert.deepEqual((await installed()).sort(), [
      'Deployment/istio-ingressgateway',
      'HorizontalPodAutoscaler/istio-ingressgateway',
      'Role/istio-ingressgateway-sds',
      'RoleBinding/istio-ingressgateway-sds',
      'Service/istio-ingressgateway',
      'ServiceAccount/istio-ingressgateway-service-account',
    ]);
    const svc = await fx.core.readNamespacedService({ name: 'istio-ingressgateway', namespace: NS });
    assert.equal(svc.spec?.type, 'LoadBalancer');
    assert.deepEqual(
      svc.spec?.ports?.map((p) => `${p.name ?? ''}:${String(p.port)}->${String(p.targetPort)}`),
      ['status-port:15021->15021', 'http2:80->8080', 'https:443->8443'],
    );
    assert.equal(svc.metadata?.labels?.['operator.istio.io/component'], 'IngressGateways');
    const d = await fx.apps.readNamespacedDeployment({ name: 'istio-ingressgateway', namespace: NS });
    assert.equal(d.spec?.template.metadata?.labels?.['istio'], 'ingressgateway');
    assert.deepEqual(d.spec?.template.spec?.containers[0]?.args?.slice(0, 2), ['proxy', 'router']);

    const dryRun = await amesh('install', '--dry-run', ...GATEWAY_ONLY);
    assert.equal(dryRun.status, 0, dryRun.stdout + dryRun.stderr);
    for (const id of [
      'Deployment/istio-system/istio-ingressgateway',
      'Service/istio-system/istio-ingressgateway',
      'HorizontalPodAutoscaler/istio-system/istio-ingressgateway',
      'Role/istio-system/istio-ingressgateway-sds',
      'RoleBinding/istio-system/istio-ingressgateway-sds',
    ])
      assert.match(dryRun.stdout, new RegExp(`^ {2}unchanged: ${id}$`, 'm'), dryRun.stdout);

    // An install without the gateway (here: without anything) prunes its objects.
    const pruned = await amesh('install', '-y', '--set', 'profile=empty');
    assert.equal(pruned.status, 0, pruned.stdout + pruned.stderr);
    await waitFor('the gateway’s objects are pruned', async () => (await installed()).length === 0, DEADLINE_MS);

    await amesh('install', '-y', '--readiness-timeout', '1s', ...GATEWAY_ONLY);
    const removed = await amesh('uninstall', '--revision', 'default', '-y');
    assert.equal(removed.status, 0, removed.stdout + removed.stderr);
    assert.match(removed.stdout, /^ {2}Removed apps\/v1, Kind=Deployment\/istio-ingressgateway\.istio-system\.$/m);
    assert.match(
      removed.stdout,
      /^ {2}Removed rbac\.authorization\.k8s\.io\/v1, Kind=Role\/istio-ingressgateway-sds\.istio-system\.$/m,
    );
    await waitFor(
      'istio-system holds none of the install’s objects',
      async () => (await installed()).length === 0,
      DEADLINE_MS,
    );
  });

  test('an unknown value is refused before the cluster is touched, in istioctl’s words', async () => {
    const r = await amesh('install', '-y', '--set', 'values.global.proxy.foo=bar');
    assert.equal(r.status, 1);
    assert.match(
      r.stderr,
      /INSTALL_ERR_VALUES: could not unmarshal: .*unknown field "foo" in istio\.operator\.v1alpha1\.ProxyConfig/,
    );
  });

  test('kubectl apply --dry-run=server accepts the ambient and default manifests', { skip: kubectlSkip }, async () => {
    await fx.core.createNamespace({ body: { metadata: { name: NS } } }).catch((e: unknown) => {
      if ((e as { code?: number }).code !== 409) throw e;
    });
    for (const profile of ['ambient', 'default']) {
      const file = path.join(dir, `${profile}.yaml`);
      const generated = await run('manifest', 'generate', '--set', `profile=${profile}`);
      assert.equal(generated.status, 0, generated.stderr);
      if (profile === 'default')
        for (const kind of [
          'Deployment',
          'Service',
          'ServiceAccount',
          'Role',
          'RoleBinding',
          'HorizontalPodAutoscaler',
        ])
          assert.match(
            generated.stdout,
            new RegExp(`^kind: ${kind}\\nmetadata:\\n(?:  .*\\n)*?  name: istio-ingressgateway`, 'm'),
            `the default manifest has the gateway's ${kind}`,
          );
      await writeFile(file, generated.stdout);
      await ok('apply', '--dry-run=server', '-f', file);
    }
  });

  test('the ambient profile installs, a second install changes nothing, uninstall --purge leaves istio-system empty', async () => {
    const first = await amesh('install', '-y', '--set', 'profile=ambient', '--readiness-timeout', '2s');
    // istiod's Deployment has no ReplicaSet without the deployment controller: the install ends waiting for it.
    assert.match(first.stderr, /INSTALL_ERR_NOT_READY: .*Deployment\/istio-system\/istiod/s);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(fx.api.kubeconfigPath);
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    const rv = async (): Promise<string | undefined> =>
      (await apps.readNamespacedDeployment({ name: 'istiod', namespace: NS })).metadata?.resourceVersion;
    const before = await rv();
    await amesh('install', '-y', '--set', 'profile=ambient', '--readiness-timeout', '1s');
    assert.equal(await rv(), before);
    const removed = await amesh('uninstall', '--purge', '-y');
    assert.equal(removed.status, 0, removed.stdout + removed.stderr);
    await waitFor(
      'istio-system holds none of the install’s objects',
      async () => (await installed()).length === 0,
      DEADLINE_MS,
    );
  });
});
