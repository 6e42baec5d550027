import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { create, toBinary } from '@bufbuild/protobuf';
import { NamespaceSchema } from '../src/api/k8s/io/api/core/v1/generated_pb.js';
import { UnknownSchema } from '../src/api/k8s/io/apimachinery/pkg/runtime/generated_pb.js';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { startApiServer } from './helpers/in-process.js';
import type { ApiServer } from '../src/apiserver/api-server.js';

const PROTOBUF = 'application/vnd.kubernetes.protobuf';

/** kubectl's typed generators, each with the resource to read back. */
const GENERATORS: { resource: string; name: string; args: string[] }[] = [
  {
    resource: 'configmap',
    name: 'settings',
    args: ['create', 'configmap', 'settings', '--from-literal=color=blue', '--from-literal=size=10'],
  },
  {
    resource: 'secret',
    name: 'creds',
    args: ['create', 'secret', 'generic', 'creds', '--from-literal=password=s3cr3t'],
  },
  { resource: 'serviceaccount', name: 'web', args: ['create', 'serviceaccount', 'web'] },
  {
    resource: 'deployment',
    name: 'web',
    args: ['create', 'deployment', 'web', '--image=nginx:1.27', '--replicas=2', '--port=80'],
  },
  { resource: 'service', name: 'web', args: ['create', 'service', 'clusterip', 'web', '--tcp=80:8080'] },
  { resource: 'job', name: 'once', args: ['create', 'job', 'once', '--image=busybox:1.36', '--', 'echo', 'hi'] },
  {
    resource: 'pod',
    name: 'shell',
    args: [
      'run',
      'shell',
      '--image=busybox:1.36',
      '--port=8080',
      '--env=MODE=debug',
      '--labels=app=shell',
      '--',
      'sleep',
      '3600',
    ],
  },
  {
    resource: 'cronjob',
    name: 'tick',
    args: ['create', 'cronjob', 'tick', '--image=busybox:1.36', '--schedule=*/5 * * * *', '--', 'date'],
  },
];

/** Fields the server assigns per object (identity, time, allocation), left out when comparing two objects. */
const VOLATILE_KEYS = [
  'uid',
  'resourceVersion',
  'creationTimestamp',
  'namespace',
  'clusterIP',
  'clusterIPs',
  'controller-uid',
  'batch.kubernetes.io/controller-uid',
];

/** The object without what differs between two creations of it: ids, times, addresses, a random volume name. */
function comparable(o: Record<string, unknown>): unknown {
  const text = JSON.stringify(o, (key, value: unknown) => {
    if (VOLATILE_KEYS.includes(key)) return undefined;
    if (typeof value === 'string' && /^kube-api-access-[a-z0-9]{5}$/.test(value)) return 'kube-api-access-<random>';
    return value;
  });
  return JSON.parse(text) as unknown;
}

/** A Namespace as client-go frames a protobuf body, with `kind` in the envelope. */
function namespaceBody(kind: string, name: string, labels: Record<string, string> = {}): Buffer {
  const raw = toBinary(NamespaceSchema, create(NamespaceSchema, { metadata: { name, labels } }));
  return Buffer.concat([
    Buffer.from('k8s\0', 'latin1'),
    toBinary(UnknownSchema, create(UnknownSchema, { typeMeta: { apiVersion: 'v1', kind }, raw })),
  ]);
}

interface Reply {
  status: number;
  body: { reason?: string; message?: string; code?: number };
}

describe(
  'kubectl 1.32 typed generators and run (protobuf bodies) against amesh apiserver',
  { skip: kubectlSkip },
  () => {
    let dir: string;
    let api: ApiServer;
    let admin: string;
    const { kubectl, ok } = kubectlWith(() => api.kubeconfigPath);
    const getJson = async (ns: string, resource: string, name: string): Promise<Record<string, unknown>> =>
      JSON.parse(await ok('get', resource, name, '-n', ns, '-o', 'json')) as Record<string, unknown>;
    const send = (method: string, p: string, contentType: string, body: Buffer): Promise<Reply> =>
      new Promise((resolve, reject) => {
        const req = https.request(
          {
            host: '127.0.0.1',
            port: api.port,
            method,
            path: p,
            ca: api.caCertPem,
            servername: 'localhost',
            headers: {
              authorization: `Bearer ${admin}`,
              'content-type': contentType,
              accept: `${PROTOBUF},application/json`,
            },
          },
          (res) => {
            let text = '';
            res.on('data', (c: Buffer) => (text += c.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Reply['body'] }));
          },
        );
        req.on('error', reject);
        req.end(body);
      });

    before(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'amesh-kubectl-create-'));
      api = await startApiServer(path.join(dir, 'data'));
      admin = /token: (\S+)/.exec(await readFile(api.kubeconfigPath, 'utf8'))?.[1] ?? '';
    });
    after(async () => {
      await api.stop();
      await rm(dir, { recursive: true, force: true });
    });

    test('create namespace sends a protobuf body, and the namespace is stored', async () => {
      const r = await kubectl('create', 'namespace', 'via-protobuf', '-v=8');
      assert.equal(r.status, 0, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(`Content-Type: ${PROTOBUF.replaceAll('.', '\\.')}`),
        'kubectl sent a protobuf body',
      );
      const ns = await getJson('', 'namespace', 'via-protobuf');
      assert.deepEqual((ns.metadata as { name: string }).name, 'via-protobuf');
      assert.deepEqual(ns.status, { phase: 'Active' });
      await ok('create', 'namespace', 'via-json');
    });

    test('each generator stores the object its JSON form (--dry-run=client -o json | create -f) stores', async () => {
      for (const g of GENERATORS) {
        await ok('-n', 'via-protobuf', ...g.args);
        const file = path.join(dir, `${g.resource}.json`);
        await writeFile(file, await ok('-n', 'via-json', '--dry-run=client', '-o', 'json', ...g.args));
        await ok('create', '-f', file, '-n', 'via-json');
        assert.deepEqual(
          comparable(await getJson('via-protobuf', g.resource, g.name)),
          comparable(await getJson('via-json', g.resource, g.name)),
          `${g.resource} ${g.name}`,
        );
      }
    });

    test('the stored objects carry what the generators were given', async () => {
      const cm = await getJson('via-protobuf', 'configmap', 'settings');
      assert.deepEqual(cm.data, { color: 'blue', size: '10' });
      const secret = await getJson('via-protobuf', 'secret', 'creds');
      assert.equal(secret.type, 'Opaque');
      assert.equal(Buffer.from((secret.data as { password: string }).password, 'base64').toString(), 's3cr3t');
      const deploy = (await getJson('via-protobuf', 'deployment', 'web')) as {
        spec: {
          replicas: number;
          selector: unknown;
          template: { spec: { containers: { image: string; ports: unknown[] }[] } };
        };
      };
      assert.equal(deploy.spec.replicas, 2);
      assert.deepEqual(deploy.spec.selector, { matchLabels: { app: 'web' } });
      assert.equal(deploy.spec.template.spec.containers[0]?.image, 'nginx:1.27');
      assert.deepEqual(deploy.spec.template.spec.containers[0]?.ports, [{ containerPort: 80, protocol: 'TCP' }]);
      const svc = (await getJson('via-protobuf', 'service', 'web')) as {
        spec: { clusterIP: string; ports: { port: number; targetPort: number }[] };
      };
      assert.match(svc.spec.clusterIP, /^10\.96\.\d+\.\d+$/);
      assert.deepEqual(
        svc.spec.ports.map((p) => [p.port, p.targetPort]),
        [[80, 8080]],
      );
      const job = (await getJson('via-protobuf', 'job', 'once')) as {
        spec: { template: { spec: { restartPolicy: string; containers: { command: string[] }[] } } };
      };
      assert.equal(job.spec.template.spec.restartPolicy, 'Never');
      assert.deepEqual(job.spec.template.spec.containers[0]?.command, ['echo', 'hi']);
      const cron = (await getJson('via-protobuf', 'cronjob', 'tick')) as { spec: { schedule: string } };
      assert.equal(cron.spec.schedule, '*/5 * * * *');
    });

    test('create token sends a protobuf TokenRequest and gets a token for the audience and duration asked', async () => {
      const token = (
        await ok('create', 'token', 'web', '-n', 'via-protobuf', '--audience=istio-ca', '--duration=1h')
      ).trim();
      const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as {
        aud: string[];
        exp: number;
        iat: number;
        sub: string;
      };
      assert.deepEqual(claims.aud, ['istio-ca']);
      assert.equal(claims.exp - claims.iat, 3600);
      assert.equal(claims.sub, 'system:serviceaccount:via-protobuf:web');
    });

    test('bad protobuf bodies get a clear 4xx Status, and the server keeps serving', async () => {
      const envelope = (kind: string): Buffer => namespaceBody(kind, 'bad');
      const cases: { what: string; body: Buffer; code: number; message: RegExp }[] = [
        {
          what: 'wrong magic',
          body: Buffer.from('{"kind":"Namespace"}'),
          code: 400,
          message: /does not start with the prefix/,
        },
        { what: 'truncated', body: envelope('Namespace').subarray(0, 20), code: 400, message: /could not be decoded/ },
        {
          what: 'unknown kind',
          body: envelope('Frobnicator'),
          code: 400,
          message: /no kind "Frobnicator" is registered/,
        },
        {
          what: 'served kind not decoded from protobuf',
          body: envelope('Node'),
          code: 415,
          message: /kubectl apply -f/,
        },
      ];
      for (const c of cases) {
        const r = await send('POST', '/api/v1/namespaces', PROTOBUF, c.body);
        assert.equal(r.status, c.code, `${c.what}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.code, c.code);
        assert.match(r.body.message ?? '', c.message, c.what);
      }
      const good = await send('POST', '/api/v1/namespaces', PROTOBUF, envelope('Namespace'));
      assert.equal(good.status, 201, JSON.stringify(good.body));
    });

    test('an update (PUT) with a protobuf body is decoded as a create is', async () => {
      const r = await send(
        'PUT',
        '/api/v1/namespaces/via-protobuf',
        PROTOBUF,
        namespaceBody('Namespace', 'via-protobuf', { 'istio.io/dataplane-mode': 'ambient' }),
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const ns = (await getJson('', 'namespace', 'via-protobuf')) as { metadata: { labels: Record<string, string> } };
      assert.equal(ns.metadata.labels['istio.io/dataplane-mode'], 'ambient');
    });
  },
);
