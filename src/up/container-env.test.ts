import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { containerArgv, containerEnv, expandVarRefs } from './container-env.js';

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
  const env = containerEnv(pod, c, '10.244.1.5', '10.240.0.3');
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
