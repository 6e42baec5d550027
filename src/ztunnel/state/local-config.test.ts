import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseLocalConfig } from './local-config.js';
import { isMeshError } from '../../lib/errors.js';

const VALID = `
workloads:
- uid: cluster1//v1/Pod/default/local
  name: local
  namespace: default
  serviceAccount: default
  workloadIps: ["127.0.0.1"]
  protocol: HBONE
  node: local
  network: ""
  services:
    "default/example.com":
      80: 8080
policies:
  - action: Allow
    rules:
    - - - notDestinationPorts:
          - 9999
    name: deny-9999
    namespace: default
    scope: Namespace
    dryRun: false
services:
- name: local
  namespace: default
  hostname: example.com
  vips:
    - /127.10.0.1
  ports:
    80: 8080
  subjectAltNames:
   - spiffe://cluster.local/ns/default/sa/local
  canonical: true
`;

test("accepts ztunnel's own examples/localhost.yaml shape", () => {
  const c = parseLocalConfig('mesh.yaml', VALID);
  assert.equal(c.workloads.length, 1);
  assert.equal(c.workloads[0]!.workload.protocol, 'HBONE');
  assert.deepEqual(c.workloads[0]!.services, { 'default/example.com': { '80': 8080 } });
  assert.equal(c.workloads[0]!.workload.capacity, 1, 'capacity defaults to 1');
  assert.equal(c.workloads[0]!.workload.clusterId, 'Kubernetes', 'cluster defaults to Kubernetes');
  assert.deepEqual(c.services[0]!.vips, ['/127.10.0.1']);
  assert.deepEqual(c.policies[0]!.rules[0]![0]![0]!.notDestinationPorts, [9999]);
});

function rejects(text: string, line: number, reason: RegExp): void {
  assert.throws(
    () => parseLocalConfig('mesh.yaml', text),
    (e: unknown) => {
      assert.ok(isMeshError(e, 'ZT_ERR_LOCAL_CONFIG_INVALID'), String(e));
      assert.ok(e.message.startsWith(`mesh.yaml:${line}:`), e.message);
      assert.match(e.message, reason);
      return true;
    },
  );
}

test('an unknown field is rejected at its line', () => {
  rejects(
    'workloads:\n- uid: a\n  namespace: x\n  workloadIps: [127.0.0.1]\n  protcol: HBONE\n',
    5,
    /unknown field "protcol"/,
  );
});

test('a bad IP is rejected at its line', () => {
  rejects('workloads:\n- uid: a\n  namespace: x\n  workloadIps:\n  - 300.1.1.1\n', 5, /not an IP address/);
});

test('a bad enum value names the accepted values', () => {
  rejects('policies:\n- name: p\n  namespace: n\n  scope: Namespace\n  action: Audit\n', 5, /Allow, Deny/);
});

test('an unknown policy scope is rejected at its line, never read as WorkloadSelector', () => {
  rejects(
    'policies:\n- name: p\n  namespace: n\n  scope: Selector\n  action: Allow\n',
    4,
    /Global, Namespace, WorkloadSelector, got "Selector"/,
  );
});

test('a policy without an action or scope is rejected, never defaulted to Allow', () => {
  rejects('policies:\n- name: p\n  namespace: n\n  scope: Namespace\n', 2, /action: is required/);
  rejects('policies:\n- name: p\n  namespace: n\n  action: Deny\n', 2, /scope: is required/);
});

test('YAML syntax errors carry the line', () => {
  rejects('workloads:\n- uid: a\n  namespace: x: y\n  node: n\n', 3, /invalid YAML/);
});

test('duplicate workload uids are rejected', () => {
  rejects(
    'workloads:\n- {uid: a, namespace: x, workloadIps: [127.0.0.1]}\n- {uid: a, namespace: x, workloadIps: [127.0.0.2]}\n',
    3,
    /duplicate uid/,
  );
});

test('ports out of range are rejected', () => {
  rejects(
    'services:\n- name: s\n  namespace: n\n  hostname: h\n  vips: []\n  ports:\n    80: 70000\n',
    7,
    /0\.\.65535/,
  );
});

test('a missing local config file is an actionable error, not a bare ENOENT', async () => {
  const { loadLocalConfig } = await import('./local-config.js');
  await assert.rejects(
    loadLocalConfig('/nonexistent/mesh.yaml'),
    (e: unknown) =>
      isMeshError(e, 'ZT_ERR_LOCAL_CONFIG_INVALID') &&
      /cannot read local config \/nonexistent\/mesh\.yaml: ENOENT .*LOCAL_XDS_PATH/.test(e.message),
  );
});
