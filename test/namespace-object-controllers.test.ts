/**
 * The ServiceAccounts controller and the root CA publisher against the embedded API server, through the API as
 * @kubernetes/client-node sees it: every namespace gets its `default` ServiceAccount and its `kube-root-ca.crt`,
 * and both are put back when deleted or edited.
 */
import { after, before, test } from 'node:test';
import { RootCaCertPublisher } from '../src/controllers/root-ca-cert-publisher.js';
import { ServiceAccountController } from '../src/controllers/service-account-controller.js';
import { startControllers, type ControllerFixture } from './helpers/controller-fixture.js';
import { waitFor } from './helpers/mesh-fixture.js';

const CA = '-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n';
const DEADLINE_MS = 10_000;
let f: ControllerFixture;

before(async () => {
  f = await startControllers('namespace-objects', (kc, informers, logs) => [
    new ServiceAccountController(kc, informers, logs.scope('serviceaccount')),
    new RootCaCertPublisher(kc, informers, CA, logs.scope('root-ca')),
  ]);
});
after(() => f.stop());

const account = (ns: string) =>
  f.core.readNamespacedServiceAccount({ name: 'default', namespace: ns }).catch(() => undefined);
const rootCa = (ns: string) =>
  f.core.readNamespacedConfigMap({ name: 'kube-root-ca.crt', namespace: ns }).catch(() => undefined);

test('a new namespace gets its default ServiceAccount and kube-root-ca.crt; a deleted one comes back', async () => {
  await f.core.createNamespace({ body: { metadata: { name: 'team-a' } } });
  await waitFor(
    'default account and CA',
    async () => (await account('team-a')) !== undefined && (await rootCa('team-a'))?.data?.['ca.crt'] === CA,
    DEADLINE_MS,
  );
  await f.core.deleteNamespacedServiceAccount({ name: 'default', namespace: 'team-a' });
  await f.core.deleteNamespacedConfigMap({ name: 'kube-root-ca.crt', namespace: 'team-a' });
  await waitFor(
    'both made again',
    async () => (await account('team-a')) !== undefined && (await rootCa('team-a')) !== undefined,
    DEADLINE_MS,
  );
});

test('an edited kube-root-ca.crt is put back to the CA alone', async () => {
  await f.core.createNamespace({ body: { metadata: { name: 'team-b' } } });
  await waitFor('the CA published', async () => (await rootCa('team-b')) !== undefined, DEADLINE_MS);
  await f.core.patchNamespacedConfigMap({
    name: 'kube-root-ca.crt',
    namespace: 'team-b',
    body: [{ op: 'add', path: '/data/extra', value: 'x' }],
  });
  await waitFor(
    'restored',
    async () => JSON.stringify((await rootCa('team-b'))?.data) === JSON.stringify({ 'ca.crt': CA }),
    DEADLINE_MS,
  );
});
