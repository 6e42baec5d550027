import { test } from 'node:test';
import assert from 'node:assert/strict';
import { consoleAlert } from './console-alerts.js';
import { ameshInvocation } from './amesh-invocation.js';

test('an error in up.log is one console line led by its file:line, or naming the pod and container with the command for its output; the rest stays in the log', () => {
  assert.equal(
    consoleAlert(
      {
        level: 'error',
        scope: 'directory',
        message: 'refused an invalid manifest; its object keeps its last good version',
        error: '/m/broken.yaml:3: invalid YAML: bad indentation',
      },
      '/d',
    ),
    '/m/broken.yaml:3: invalid YAML: bad indentation (refused an invalid manifest; its object keeps its last good version)',
  );
  assert.equal(
    consoleAlert(
      {
        level: 'error',
        scope: 'applier',
        message: '/m/a.yaml:1: Pod x/web: the API refused it: namespace x not found',
      },
      '/d',
    ),
    '/m/a.yaml:1: Pod x/web: the API refused it: namespace x not found',
  );
  assert.equal(
    consoleAlert(
      {
        level: 'error',
        scope: 'kubelet.node1',
        pod: 'istio-system/ztunnel-node1',
        container: 'istio-proxy',
        message: 'container istio-proxy failed: killed by SIGKILL',
      },
      '/d',
    ),
    `istio-system/ztunnel-node1: container istio-proxy failed: killed by SIGKILL (${ameshInvocation()} logs --data-dir /d istio-system/ztunnel-node1 -c istio-proxy)`,
  );
  assert.equal(
    consoleAlert({ level: 'warn', scope: 'directory', message: 'serving the last good version' }, '/d'),
    undefined,
  );
});
