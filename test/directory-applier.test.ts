/**
 * A manifest directory applied to an embedded API server the way `istiod --config-dir` and `amesh up` apply it
 * (`DirectoryApplier`), with istiod's config store fed by informers on the same API (`KubeSource`) and the model
 * istiod serves from that store. A policy the API refuses at run time still denies; after a failed apply, the retry
 * applies every change made since, not only the latest.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { Action, Scope } from '../src/api/istio/security/authorization_pb.js';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { IncrementalMeshModel } from '../src/istiod/model/incremental-mesh-model.js';
import { ConfigStore } from '../src/istiod/registry/config-store.js';
import { DirectoryApplier } from '../src/istiod/registry/directory-applier.js';
import { KubeSource } from '../src/istiod/registry/kube-source.js';
import { Backoff } from '../src/lib/backoff.js';
import { ApiFront } from './helpers/api-front.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { startApiServer } from './helpers/in-process.js';
import { namespaces, object } from './helpers/manifests.js';

/** How long a change may take to go through the API and its informers before the test fails. */
const CHANGE_DEADLINE_MS = 10_000;
/** A retry that never comes during a test: what happens must be the work of the change the test makes. */
const NO_RETRY = new Backoff(3_600_000, 3_600_000);

const policy = (name: string, action: string, extra: Record<string, unknown> = {}): string =>
  object({
    apiVersion: 'security.istio.io/v1',
    kind: 'AuthorizationPolicy',
    metadata: { name, namespace: 'backend', ...extra },
    spec: { action, rules: [{ from: [{ source: { principals: ['cluster.local/ns/frontend/sa/web'] } }] }] },
  });
/** Finalizers the API refuses on any object (422), which the directory's schema does not check. */
const REFUSED_BY_API = { finalizers: ['orphan', 'foregroundDeletion'] };

describe("a manifest directory applied to the API with istiod's config store on its informers", () => {
  let dir: string;
  let api: ApiServer;
  let front: ApiFront;
  let kube: KubeSource;
  let applier: DirectoryApplier;
  let custom: k8s.CustomObjectsApi;
  const logs = new CapturedLogs('istiod');
  const store = new ConfigStore(logs.control.scope('store'));
  const model = new IncrementalMeshModel({
    clusterId: 'Kubernetes',
    trustDomain: 'cluster.local',
    rootNamespace: 'istio-system',
    domainSuffix: 'cluster.local',
    ipAutoallocate: true,
  });
  store.on('change', (changes) => model.update(changes));
  const config = (file: string): string => path.join(dir, 'config', file);

  /** Resolves once the model istiod serves satisfies `ok`, checked after each change of the store. */
  const served = (what: string, ok: () => boolean): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (!ok()) return;
        clearTimeout(deadline);
        store.off('change', check);
        resolve();
      };
      const deadline = setTimeout(() => {
        store.off('change', check);
        reject(new Error(`istiod never served ${what}`));
      }, CHANGE_DEADLINE_MS);
      store.on('change', check);
      check();
    });

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-directory-applier-'));
    await mkdir(path.join(dir, 'config'));
    await writeFile(config('namespaces.yaml'), namespaces('backend'));
    api = await startApiServer(path.join(dir, 'data'));
    front = await ApiFront.start(api, path.join(dir, 'data'));
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    custom = kc.makeApiClient(k8s.CustomObjectsApi);
    kube = new KubeSource(kc, store, logs.control.scope('kube'), 'istio-system');
    kube.start();
    await kube.synced;
    // The applier goes through the front, which the test makes fail; the informers read the API directly.
    applier = await DirectoryApplier.start({
      dir: path.join(dir, 'config'),
      kubeconfig: front.kubeconfig,
      store,
      logs: logs.control,
      retry: NO_RETRY,
    });
  });
  after(async () => {
    await applier.stop();
    await kube.stop();
    store.stop();
    await front.stop();
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('a DENY policy the API refuses at run time is served as deny-all for its namespace until the API takes it', async () => {
    await writeFile(config('deny.yaml'), policy('deny-web', 'DENY', REFUSED_BY_API));
    await served('the stand-in', () => model.authorization('backend/deny-web') !== undefined);
    const standIn = model.authorization('backend/deny-web')!;
    assert.equal(standIn.action, Action.DENY);
    assert.equal(standIn.scope, Scope.NAMESPACE);
    assert.deepEqual(standIn.rules, [{ clauses: [] }], 'one rule that matches every connection');
    await writeFile(config('deny.yaml'), policy('deny-web', 'DENY'));
    await served(
      'the policy the API took',
      () => model.authorization('backend/deny-web')?.rules[0]?.clauses.length === 1,
    );
    await unlink(config('deny.yaml'));
    await served('no policy once the directory drops it', () => model.authorization('backend/deny-web') === undefined);
  });

  test('the stand-in for a policy the API never took goes when its document leaves the directory', async () => {
    await writeFile(config('allow.yaml'), policy('allow-web', 'ALLOW', REFUSED_BY_API));
    await served('the stand-in', () => model.authorization('backend/allow-web')?.action === Action.DENY);
    await unlink(config('allow.yaml'));
    await served('no stand-in', () => model.authorization('backend/allow-web') === undefined);
  });

  test('after a failed apply, the next apply is of every change since, not only the latest', async () => {
    const since = logs.lines.length;
    const logged = (msg: string): Promise<unknown> =>
      logs.waitFor(msg, (l) => logs.lines.indexOf(l) >= since && l['message'] === msg);
    front.fail = () => 503;
    await writeFile(config('a.yaml'), policy('allow-a', 'ALLOW'));
    await logged('cannot apply the config directory to the API; retrying all of it');
    front.fail = () => undefined;
    await writeFile(config('b.yaml'), policy('allow-b', 'ALLOW'));
    await logged('config directory applied');
    for (const name of ['allow-a', 'allow-b'])
      await custom.getNamespacedCustomObject({
        group: 'security.istio.io',
        version: 'v1',
        namespace: 'backend',
        plural: 'authorizationpolicies',
        name,
      });
  });
});
