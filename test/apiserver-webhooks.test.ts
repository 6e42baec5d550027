/**
 * The API server's admission webhooks against a webhook server it did not write (test/interop/admission_webhook.py,
 * Python's http.server over TLS), driven by kubectl: refusals with the webhook's message, a mutating webhook's
 * JSONPatch, failurePolicy Fail and Ignore with the webhook unreachable, a timeout, TLS verified against the
 * caBundle, a service reference reached through its EndpointSlice, selectors, and dry runs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { startApiServer } from './helpers/in-process.js';
import { PYTHON } from './helpers/python.js';
import { packageRoot } from '../src/lib/package-root.js';
import type { ApiServer } from '../src/apiserver/api-server.js';

/** The Service the webhooks are reached through, and the name its certificate carries. */
const SERVICE = { namespace: 'webhooks', name: 'hooks' } as const;

/** A CA and a server certificate for `hooks.webhooks.svc` and 127.0.0.1, made by the openssl CLI. */
function makeCerts(dir: string, prefix: string): { ca: string; cert: string; key: string } {
  const f = (n: string): string => path.join(dir, `${prefix}-${n}`);
  const openssl = (...args: string[]): void => void execFileSync('openssl', args, { stdio: 'ignore' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=webhook test CA',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.pem'),
  );
  openssl(
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-subj',
    '/CN=hooks.webhooks.svc',
    '-keyout',
    f('server.key'),
    '-out',
    f('server.csr'),
  );
  openssl(
    'x509',
    '-req',
    '-in',
    f('server.csr'),
    '-CA',
    f('ca.pem'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    f('ext.cnf'),
    '-out',
    f('server.pem'),
  );
  return { ca: f('ca.pem'), cert: f('server.pem'), key: f('server.key') };
}

describe('admission webhooks', { skip: kubectlSkip }, () => {
  let dir: string;
  let api: ApiServer;
  let hooks: ChildProcess;
  let caBundle: string;
  let otherCaBundle: string;
  let hookPort: number;
  const { kubectl, ok } = kubectlWith(() => api.kubeconfigPath);

  const apply = async (doc: object, ...flags: string[]): Promise<{ status: number | null; stderr: string }> => {
    const file = path.join(dir, `doc-${String(Math.random()).slice(2)}.json`);
    await writeFile(file, JSON.stringify(doc));
    return kubectl('apply', '-f', file, ...flags);
  };

  /** A webhook configuration for objects in `namespace`, at `path` of the Service, removed after the test. */
  const configure = async (
    kind: 'Validating' | 'Mutating',
    name: string,
    namespace: string,
    webhook: Record<string, unknown>,
  ): Promise<() => Promise<void>> => {
    const doc = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: `${kind}WebhookConfiguration`,
      metadata: { name },
      webhooks: [
        {
          name: `${name}.hooks.test`,
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
          rules: [
            {
              apiGroups: [''],
              apiVersions: ['v1'],
              operations: ['CREATE', 'UPDATE', 'DELETE'],
              resources: ['configmaps'],
            },
          ],
          ...webhook,
          clientConfig: {
            service: { ...SERVICE, path: '/validate', port: 443 },
            caBundle,
            ...(webhook.clientConfig as object | undefined),
          },
        },
      ],
    };
    const r = await apply(doc);
    assert.equal(r.status, 0, r.stderr);
    return async () => {
      await ok('delete', `${kind.toLowerCase()}webhookconfiguration`, name);
    };
  };

  const configMap = (namespace: string, name: string, labels: Record<string, string> = {}): object => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace, labels },
    data: { k: 'v' },
  });

  const exists = async (namespace: string, name: string): Promise<boolean> =>
    (await kubectl('-n', namespace, 'get', 'configmap', name)).status === 0;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-webhooks-'));
    await writeFile(
      path.join(dir, 'main-ext.cnf'),
      'subjectAltName = DNS:hooks.webhooks.svc, IP:127.0.0.1\nbasicConstraints = CA:false\n',
    );
    await writeFile(path.join(dir, 'other-ext.cnf'), 'subjectAltName = DNS:hooks.webhooks.svc\n');
    const main = makeCerts(dir, 'main');
    const other = makeCerts(dir, 'other');
    caBundle = (await readFile(main.ca)).toString('base64');
    otherCaBundle = (await readFile(other.ca)).toString('base64');
    hooks = spawn(PYTHON, [path.join(packageRoot(), 'test', 'interop', 'admission_webhook.py'), main.cert, main.key], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const [first] = (await once(hooks.stdout!, 'data')) as [Buffer];
    hookPort = Number(/port (\d+)/.exec(first.toString())?.[1]);
    api = await startApiServer(path.join(dir, 'api'));
    for (const ns of [SERVICE.namespace, 'refused', 'mutated', 'down', 'slow', 'tls', 'selected', 'exempt'])
      await ok('create', 'namespace', ns);
    // The Service and its endpoints as the EndpointSlice controller would write them (kubectl names the port
    // 443-8443): the webhook server's port.
    await ok('-n', SERVICE.namespace, 'create', 'service', 'clusterip', SERVICE.name, '--tcp=443:8443');
    const r = await apply({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'hooks-1', namespace: SERVICE.namespace, labels: { 'kubernetes.io/service-name': 'hooks' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
      ports: [{ name: '443-8443', port: hookPort, protocol: 'TCP' }],
    });
    assert.equal(r.status, 0, r.stderr);
  });

  after(async () => {
    hooks?.stdin?.end();
    hooks?.kill();
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('a refusal reaches kubectl with the webhook message and nothing is stored', async () => {
    const remove = await configure('Validating', 'deny', 'refused', {});
    try {
      const r = await apply(configMap('refused', 'no', { deny: 'yes' }));
      assert.notEqual(r.status, 0);
      assert.match(
        r.stderr,
        /admission webhook "deny\.hooks\.test" denied the request: label deny=yes is refused/,
        r.stderr,
      );
      assert.equal(await exists('refused', 'no'), false);
      const allowed = await apply(configMap('refused', 'yes'));
      assert.equal(allowed.status, 0, allowed.stderr);
      assert.match(allowed.stderr, /Warning: dryRun=false/);
      // An update that adds the label is refused too, and the stored object keeps its old labels.
      const update = await apply(configMap('refused', 'yes', { deny: 'yes' }));
      assert.match(update.stderr, /denied the request: label deny=yes is refused/);
      assert.equal(await ok('-n', 'refused', 'get', 'configmap', 'yes', '-o', 'jsonpath={.metadata.labels.deny}'), '');
    } finally {
      await remove();
    }
  });

  test('a server-side dry run is sent with dryRun true and refused the same way', async () => {
    const remove = await configure('Validating', 'dryrun', 'refused', {});
    try {
      const r = await apply(configMap('refused', 'dry', { deny: 'yes' }), '--dry-run=server');
      assert.match(r.stderr, /denied the request: label deny=yes is refused/);
      const allowed = await apply(configMap('refused', 'dry'), '--dry-run=server');
      assert.match(allowed.stderr, /Warning: dryRun=true/);
      assert.equal(await exists('refused', 'dry'), false);
    } finally {
      await remove();
    }
  });

  test("a mutating webhook's JSONPatch is applied before the object is stored", async () => {
    const remove = await configure('Mutating', 'label', 'mutated', {
      clientConfig: { service: { ...SERVICE, path: '/mutate', port: 443 } },
    });
    try {
      const r = await apply(configMap('mutated', 'patched', { app: 'web' }));
      assert.equal(r.status, 0, r.stderr);
      const labels = JSON.parse(
        await ok('-n', 'mutated', 'get', 'configmap', 'patched', '-o', 'jsonpath={.metadata.labels}'),
      ) as Record<string, string>;
      assert.deepEqual(labels, { app: 'web', mutated: 'yes' });
    } finally {
      await remove();
    }
  });

  test('with the webhook unreachable, failurePolicy Fail refuses and Ignore lets the write through', async () => {
    const noEndpoints = { service: { namespace: SERVICE.namespace, name: 'missing', path: '/validate', port: 443 } };
    const removeFail = await configure('Validating', 'down-fail', 'down', { clientConfig: noEndpoints });
    try {
      const r = await apply(configMap('down', 'refused'));
      assert.match(
        r.stderr,
        /Internal error occurred: failed calling webhook "down-fail\.hooks\.test": failed to call webhook: Post "https:\/\/missing\.webhooks\.svc:443\/validate\?timeout=10s": service "missing" not found/,
        r.stderr,
      );
      assert.equal(await exists('down', 'refused'), false);
    } finally {
      await removeFail();
    }
    const removeIgnore = await configure('Validating', 'down-ignore', 'down', {
      clientConfig: noEndpoints,
      failurePolicy: 'Ignore',
    });
    try {
      const r = await apply(configMap('down', 'let-through'));
      assert.equal(r.status, 0, r.stderr);
      assert.equal(await exists('down', 'let-through'), true);
    } finally {
      await removeIgnore();
    }
  });

  test('a webhook slower than timeoutSeconds fails the call', async () => {
    const remove = await configure('Validating', 'slow', 'slow', {
      timeoutSeconds: 1,
      clientConfig: { service: { ...SERVICE, path: '/slow', port: 443 } },
    });
    try {
      const r = await apply(configMap('slow', 'late'));
      assert.match(r.stderr, /failed calling webhook "slow\.hooks\.test".*\?timeout=1s": context deadline exceeded/);
      assert.equal(await exists('slow', 'late'), false);
    } finally {
      await remove();
    }
  });

  test('the webhook certificate is verified against caBundle, and a wrong uid in the answer is refused', async () => {
    const removeCa = await configure('Validating', 'wrong-ca', 'tls', { clientConfig: { caBundle: otherCaBundle } });
    try {
      const r = await apply(configMap('tls', 'unverified'));
      assert.match(r.stderr, /failed calling webhook "wrong-ca\.hooks\.test".*certificate signed by unknown authority/);
    } finally {
      await removeCa();
    }
    const removeUid = await configure('Validating', 'bad-uid', 'tls', {
      clientConfig: { service: { ...SERVICE, path: '/bad-uid', port: 443 } },
    });
    try {
      const r = await apply(configMap('tls', 'wrong-uid'));
      assert.match(
        r.stderr,
        /received invalid webhook response: expected response\.uid="[-0-9a-f]+", got "not-the-request"/,
      );
    } finally {
      await removeUid();
    }
  });

  test('a url clientConfig reaches the webhook by address', async () => {
    const remove = await configure('Validating', 'by-url', 'selected', {
      clientConfig: { url: `https://127.0.0.1:${String(hookPort)}/validate`, service: undefined },
    });
    try {
      const r = await apply(configMap('selected', 'url-refused', { deny: 'yes' }));
      assert.match(r.stderr, /admission webhook "by-url\.hooks\.test" denied the request/);
    } finally {
      await remove();
    }
  });

  test('the object selector and the rules decide which writes a webhook sees', async () => {
    const remove = await configure('Validating', 'selector', 'selected', {
      objectSelector: { matchLabels: { checked: 'true' } },
    });
    try {
      // Not selected: the webhook would refuse it, but never sees it.
      const unselected = await apply(configMap('selected', 'unchecked', { deny: 'yes' }));
      assert.equal(unselected.status, 0, unselected.stderr);
      const selected = await apply(configMap('selected', 'checked', { deny: 'yes', checked: 'true' }));
      assert.match(selected.stderr, /denied the request/);
      // Secrets are not in the rules.
      await ok('-n', 'selected', 'create', 'secret', 'generic', 's', '--from-literal=a=b');
    } finally {
      await remove();
    }
  });

  test('webhook configurations are exempt, so a failing webhook that matches everything can be removed', async () => {
    const remove = await configure('Validating', 'everything', 'exempt', {
      namespaceSelector: {},
      rules: [{ apiGroups: ['*'], apiVersions: ['*'], operations: ['*'], resources: ['*/*'] }],
      clientConfig: { service: { namespace: SERVICE.namespace, name: 'missing', port: 443 } },
    });
    const blocked = await kubectl('create', 'namespace', 'blocked');
    assert.match(blocked.stderr, /failed calling webhook "everything\.hooks\.test"/);
    await remove();
    await ok('create', 'namespace', 'blocked');
  });
});
