/**
 * Authorization fails closed end to end: manifests in a config directory → istiod's manifest directory and model → the
 * xDS resources istiod sends → ztunnel's conversion and state → the decision for one connection. Each case is a
 * policy that, before, let the connection through.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { ManifestDirectory } from '../src/istiod/registry/manifest-directory.js';
import { buildMeshModel } from '../src/istiod/model/mesh-model.js';
import { addressResource, authorizationResource } from '../src/istiod/xds/convert.js';
import { addressFromXds, authorizationFromXds } from '../src/ztunnel/state/convert.js';
import { ProxyState } from '../src/ztunnel/state/proxy-state.js';
import { evaluate, type RbacDecision } from '../src/ztunnel/rbac.js';
import type { LocalWorkload } from '../src/ztunnel/state/local-config.js';

const CFG = {
  clusterId: 'Kubernetes',
  trustDomain: 'cluster.local',
  rootNamespace: 'istio-system',
  domainSuffix: 'cluster.local',
  ipAutoallocate: true,
};
const POD = `apiVersion: v1
kind: Pod
metadata: {name: echo-0, namespace: backend, labels: {app: echo}}
spec: {serviceAccountName: echo}
status: {phase: Running, podIP: 127.72.0.2}
`;
const policy = (kind: string, spec: string): string =>
  `---\napiVersion: security.istio.io/v1\nkind: ${kind}\nmetadata: {name: p, namespace: backend}\nspec:\n${spec}`;

/** The decision ztunnel makes for a connection to echo-0:8080, given the manifests istiod reads. */
async function decide(manifests: string, mtls = true): Promise<{ decision: RbacDecision; logs: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-authz-'));
  const logs: string[] = [];
  try {
    await writeFile(path.join(dir, 'mesh.yaml'), manifests);
    const directory = new ManifestDirectory(
      dir,
      pino(
        { level: 'trace' },
        new Writable({
          write: (c: Buffer, _e, cb) => {
            logs.push(String(c));
            cb();
          },
        }),
      ),
    );
    await directory.reload();
    const model = buildMeshModel(directory.all(), CFG);
    const workloads: LocalWorkload[] = [];
    for (const [name, a] of model.addresses) {
      const r = addressFromXds(name, addressResource(name, a).resource);
      if ('workload' in r) workloads.push(r.workload);
    }
    const policies = [...model.authorizations].map(([name, a]) => {
      const r = authorizationFromXds(name, authorizationResource(name, a).resource);
      assert.equal(r.rejected, undefined, 'istiod sends only what ztunnel accepts');
      return r.policy;
    });
    const state = new ProxyState();
    state.apply({ workloads, services: [], policies });
    const echo = state.workloadByAddr('', '127.72.0.2');
    assert.ok(echo !== undefined, 'the pod is served');
    const srcIdentity = mtls
      ? { trustDomain: 'cluster.local', namespace: 'frontend', serviceAccount: 'web' }
      : undefined;
    return {
      decision: evaluate(state.policiesFor(echo), {
        srcIp: '127.72.0.1',
        dstIp: '127.72.0.2',
        dstPort: 8080,
        srcIdentity,
      }),
      logs: logs.join(''),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const cases: { name: string; manifests: string; mtls?: boolean; logged?: RegExp }[] = [
  {
    name: 'a DENY on ports ["8080", "80a"] denies 8080',
    manifests:
      POD +
      policy('AuthorizationPolicy', '  action: DENY\n  rules:\n  - to: [{operation: {ports: ["8080", "80a"]}}]\n'),
    logged:
      /mesh\.yaml:13: AuthorizationPolicy backend\/p: spec\.rules\[0\]\.to\[0\]\.operation\.ports\[1\]: \\"80a\\" is not a port/,
  },
  {
    name: 'a DENY whose rules is a string is refused, and stands in as deny-all',
    manifests: POD + policy('AuthorizationPolicy', '  action: DENY\n  rules: "all"\n'),
    logged: /mesh\.yaml:12: AuthorizationPolicy backend\/p: spec\.rules: expected a list/,
  },
  {
    name: 'a DENY whose principals is a number is refused, and stands in as deny-all',
    manifests: POD + policy('AuthorizationPolicy', '  action: DENY\n  rules:\n  - from: [{source: {principals: 5}}]\n'),
    logged: /mesh\.yaml:13: .*principals: expected a list/,
  },
  {
    name: 'an ALLOW whose selector.matchLabels is a list is refused, never widened to allow-all',
    manifests: POD + policy('AuthorizationPolicy', '  selector: {matchLabels: [app, other]}\n  rules: [{}]\n'),
    logged: /mesh\.yaml:11: .*matchLabels: expected a mapping, got a list/,
  },
  {
    name: 'a DENY whose only port is invalid is refused, and stands in as deny-all',
    manifests:
      POD + policy('AuthorizationPolicy', '  action: DENY\n  rules:\n  - to: [{operation: {ports: ["80a"]}}]\n'),
    logged: /would deny nothing/,
  },
  {
    name: 'a DENY whose only notPorts value is invalid is refused, and stands in as deny-all',
    manifests:
      POD + policy('AuthorizationPolicy', '  action: DENY\n  rules:\n  - to: [{operation: {notPorts: ["22a"]}}]\n'),
    logged: /notPorts.*would deny nothing/,
  },
  {
    name: 'a DENY whose only notIpBlocks value is invalid is refused, and stands in as deny-all',
    manifests:
      POD +
      policy('AuthorizationPolicy', '  action: DENY\n  rules:\n  - from: [{source: {notIpBlocks: ["10.0.0.300"]}}]\n'),
    logged: /notIpBlocks.*would deny nothing/,
  },
  {
    name: 'a DENY whose only when notValues for destination.port is invalid is refused, and stands in as deny-all',
    manifests:
      POD +
      policy(
        'AuthorizationPolicy',
        '  action: DENY\n  rules:\n  - when: [{key: destination.port, notValues: ["22a"]}]\n',
      ),
    logged: /notValues.*would deny nothing/,
  },
  {
    name: 'a DENY whose selector label has no value is refused, never a selector matching nothing',
    manifests:
      POD + policy('AuthorizationPolicy', '  action: DENY\n  selector: {matchLabels: {app: }}\n  rules: [{}]\n'),
    logged: /matchLabels\.app: has no value/,
  },
  {
    name: 'a PeerAuthentication with a mode typo stands in as STRICT: plaintext is denied',
    manifests: POD + policy('PeerAuthentication', '  mtls: {mode: STRIKT}\n'),
    mtls: false,
    logged: /expected one of UNSET, DISABLE, PERMISSIVE, STRICT/,
  },
];

for (const c of cases) {
  test(`authorization fails closed: ${c.name}`, async () => {
    const { decision, logs } = await decide(c.manifests, c.mtls);
    assert.equal(decision.allowed, false, logs);
    if (c.logged !== undefined) assert.match(logs, c.logged);
  });
}

test('the same connection is allowed with no policy, so each case above is the policy at work', async () => {
  assert.equal((await decide(POD)).decision.allowed, true);
  assert.equal((await decide(POD, false)).decision.allowed, true);
});
