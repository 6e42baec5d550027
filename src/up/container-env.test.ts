import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { containerArgv, containerEnv, expandVarRefs } from './container-env.js';
import { ContainerCreateError } from './processes.js';

test('$(VAR) expands as Kubernetes does: defined names replaced, undefined ones left as written, $$ a literal $', () => {
  const vars = { POD_NAME: 'echo-0', EMPTY: '' };
  assert.equal(expandVarRefs('--name=$(POD_NAME)', vars), '--name=echo-0');
  assert.equal(expandVarRefs('$(MISSING)/$(EMPTY)x', vars), '$(MISSING)/x');
  assert.equal(expandVarRefs('$$(POD_NAME) costs $$5 or $5', vars), '$(POD_NAME) costs $5 or $5');
  assert.equal(expandVarRefs('$(POD_NAME', vars), '$(POD_NAME');
});

test("a container's env resolves fieldRefs and earlier variables in order, and its command and args are expanded against it", () => {
  const pod: V1Pod = {
    metadata: { name: 'echo-7f9c-abcde', namespace: 'backend' },
    spec: { nodeName: 'node2', containers: [] },
  };
  const c = {
    name: 'echo',
    command: ['amesh', 'echo', 'server'],
    args: ['--name', '$(POD_NAME)', '--address', '$(POD_IP):8080', '$(LATER)'],
    env: [
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
      { name: 'WHERE', value: '$(POD_NAME) on $(NODE)' },
      { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
    ],
  };
  const env = containerEnv(pod, c, { podIp: '10.244.1.5', hostIp: '10.240.0.3' });
  assert.equal(env['HOSTNAME'], 'echo-7f9c-abcde');
  assert.equal(env['WHERE'], 'echo-7f9c-abcde on $(NODE)', 'a variable defined later is not seen');
  assert.ok(env['PATH']!.split(':').some((d) => d.endsWith('/bin')));
  assert.deepEqual(containerArgv(c, env), [
    'amesh',
    'echo',
    'server',
    '--name',
    'echo-7f9c-abcde',
    '--address',
    '10.244.1.5:8080',
    '$(LATER)',
  ]);
});

test('envFrom, configMapKeyRef, secretKeyRef and resourceFieldRef: later definitions override earlier ones; a missing key is CreateContainerConfigError', () => {
  const pod: V1Pod = { metadata: { name: 'p', namespace: 'ns' }, spec: { containers: [] } };
  const sources = {
    configMap: (ns: string, name: string) =>
      ns === 'ns' && name === 'cfg' ? { data: { LEVEL: 'debug', MODE: 'fast' } } : undefined,
    secret: (ns: string, name: string) =>
      ns === 'ns' && name === 'db' ? { data: { password: Buffer.from('pw').toString('base64') } } : undefined,
  };
  const c = {
    name: 'app',
    resources: { limits: { cpu: '1500m' } },
    envFrom: [{ configMapRef: { name: 'cfg' } }, { prefix: 'DB_', secretRef: { name: 'db' } }],
    env: [
      { name: 'MODE', value: 'slow' },
      { name: 'ONE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'LEVEL' } } },
      { name: 'PW', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } },
      { name: 'CPUS', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
      { name: 'MILLI', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '1m' } } },
      { name: 'OPT', valueFrom: { configMapKeyRef: { name: 'absent', key: 'x', optional: true } } },
    ],
  };
  const env = containerEnv(pod, c, { podIp: '10.244.0.2', hostIp: '10.240.0.2' }, [], sources);
  assert.equal(env['LEVEL'], 'debug');
  assert.equal(env['MODE'], 'slow');
  assert.equal(env['ONE'], 'debug');
  assert.equal(env['DB_password'], 'pw');
  assert.equal(env['PW'], 'pw');
  assert.equal(env['CPUS'], '2');
  assert.equal(env['MILLI'], '1500');
  assert.equal('OPT' in env, false);
  assert.throws(
    () =>
      containerEnv(
        pod,
        { name: 'app', env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'NOPE' } } }] },
        { podIp: '', hostIp: '' },
        [],
        sources,
      ),
    (e: unknown) =>
      e instanceof ContainerCreateError &&
      e.reason === 'CreateContainerConfigError' &&
      e.message === "couldn't find key NOPE in ConfigMap ns/cfg",
  );
  assert.throws(
    () =>
      containerEnv(
        pod,
        { name: 'app', envFrom: [{ secretRef: { name: 'gone' } }] },
        { podIp: '', hostIp: '' },
        [],
        sources,
      ),
    { message: 'secret "gone" not found' },
  );
});
