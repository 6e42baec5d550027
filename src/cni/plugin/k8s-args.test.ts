import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../../lib/errors.js';
import { parseK8sArgs } from './k8s-args.js';

const argsError = (message: RegExp) => (e: unknown) => isMeshError(e, 'CNI_ERR_ENV') && message.test(e.message);

test('the arguments containerd passes for a pod sandbox give its name and namespace', () => {
  const a = parseK8sArgs(
    'IgnoreUnknown=1;K8S_POD_NAMESPACE=istio-system;K8S_POD_NAME=web-7d9c;K8S_POD_INFRA_CONTAINER_ID=3c41e9;K8S_POD_UID=a09038c7',
  );
  assert.deepEqual(a, { podName: 'web-7d9c', podNamespace: 'istio-system' });
  assert.ok(Object.isFrozen(a));
});

test('no CNI_ARGS is no pod; the Kubernetes keys need no IgnoreUnknown', () => {
  assert.deepEqual(parseK8sArgs(''), { podName: '', podNamespace: '' });
  assert.deepEqual(parseK8sArgs('K8S_POD_NAME=p;K8S_POD_UID=u'), { podName: 'p', podNamespace: '' });
});

test('an unknown key is an error unless IgnoreUnknown is true', () => {
  assert.throws(() => parseK8sArgs('K8S_POD_NAME=p;FOO=bar'), argsError(/unknown keys \(FOO=bar\)/));
  assert.throws(() => parseK8sArgs('IgnoreUnknown=0;FOO=bar'), argsError(/unknown keys/));
  assert.equal(parseK8sArgs('IgnoreUnknown=true;FOO=bar;K8S_POD_NAME=p').podName, 'p');
  assert.throws(() => parseK8sArgs('IgnoreUnknown=yes'), argsError(/IgnoreUnknown=yes is not a boolean/));
});

test('a pair without exactly one "=" is an error, as the reference library reads it', () => {
  assert.throws(() => parseK8sArgs('K8S_POD_NAME'), argsError(/"K8S_POD_NAME", not a KEY=VALUE pair/));
  assert.throws(() => parseK8sArgs('K8S_POD_NAME=a=b'), argsError(/not a KEY=VALUE pair/));
  assert.throws(() => parseK8sArgs('K8S_POD_NAME=p;'), argsError(/"", not a KEY=VALUE pair/));
});
