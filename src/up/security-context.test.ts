import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { containerCredentials } from './security-context.js';

const pod = (spec: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod => ({
  metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
  spec: { containers: [], ...spec },
});
const c = (securityContext: V1Container['securityContext'] = {}): V1Container => ({ name: 'app', securityContext });

test("a container with no securityContext runs as root with containerd's default capabilities, without NET_ADMIN", () => {
  const cred = containerCredentials(pod(), c());
  assert.equal(cred.uid, 0);
  assert.equal(cred.gid, 0);
  assert.ok(cred.capabilities.includes('CAP_NET_BIND_SERVICE'));
  assert.ok(!cred.capabilities.includes('CAP_NET_ADMIN'));
  assert.ok(!cred.capabilities.includes('CAP_SYS_ADMIN'));
  assert.equal(cred.noNewPrivileges, false);
});

test("capabilities follow containerd's order: drop ALL then add keeps the added one; one both added and dropped is dropped", () => {
  assert.deepEqual(
    containerCredentials(pod(), c({ capabilities: { drop: ['ALL'], add: ['NET_ADMIN'] } })).capabilities,
    ['CAP_NET_ADMIN'],
  );
  const both = containerCredentials(pod(), c({ capabilities: { add: ['NET_ADMIN'], drop: ['NET_ADMIN', 'KILL'] } }));
  assert.ok(!both.capabilities.includes('CAP_NET_ADMIN'));
  assert.ok(!both.capabilities.includes('CAP_KILL'));
  assert.ok(both.capabilities.includes('CAP_CHOWN'));
  assert.equal(containerCredentials(pod(), c({ privileged: true })).capabilities.length, 41);
});

test("the container's runAsUser and runAsGroup win over the pod's; supplementalGroups and fsGroup are extra groups", () => {
  const cred = containerCredentials(
    pod({ securityContext: { runAsUser: 1000, runAsGroup: 1000, supplementalGroups: [5, 6], fsGroup: 7 } }),
    c({ runAsUser: 2000, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true }),
  );
  assert.deepEqual([cred.uid, cred.gid, cred.additionalGids], [2000, 1000, [5, 6, 7]]);
  assert.equal(cred.noNewPrivileges, true);
  assert.equal(cred.readOnlyRootFilesystem, true);
});

test("runAsNonRoot refuses root with kubelet's messages: the image's user, or a runAsUser of 0", () => {
  assert.throws(() => containerCredentials(pod({ securityContext: { runAsNonRoot: true } }), c()), {
    message: /container has runAsNonRoot and image will run as root/,
  });
  assert.throws(() => containerCredentials(pod(), c({ runAsNonRoot: true, runAsUser: 0 })), {
    message: /container's runAsUser breaks non-root policy \(pod: "p_ns\(u1\)", container: app\)/,
  });
  assert.equal(containerCredentials(pod(), c({ runAsNonRoot: true, runAsUser: 65532 })).uid, 65532);
});
