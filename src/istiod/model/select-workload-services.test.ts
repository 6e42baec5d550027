import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifests } from '../registry/manifest-dir.js';
import { buildMeshModel } from './mesh-model.js';

const CFG = {
  clusterId: 'Kubernetes',
  trustDomain: 'cluster.local',
  rootNamespace: 'istio-system',
  domainSuffix: 'cluster.local',
  ipAutoallocate: true,
};

/** A ServiceEntry document; `extra` is YAML under `spec`, `meta` extra flow-mapping entries under `metadata`. */
const se = (
  ns: string,
  name: string,
  hosts: string[],
  extra: string,
  meta = '',
  ports = '[{number: 443, name: tls}]',
): string =>
  `---\napiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: ${name}, namespace: ${ns}${meta}}\nspec:\n  hosts: [${hosts.join(', ')}]\n  ports: ${ports}\n${extra}`;
const at = (t: string): string => `, creationTimestamp: "${t}"`;
const POD =
  '---\napiVersion: v1\nkind: Pod\nmetadata: {name: vm-0, namespace: ext, labels: {app: vm}}\nstatus: {podIP: 10.1.0.9}\n';
const SVC =
  '---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {clusterIP: 10.96.0.20, selector: {app: web}, ports: [{port: 443}]}\n';
const WEB = 'web.shop.svc.cluster.local';

/** What the model serves: services as `key canonical|-`, workloads as `uid -> services`. */
function served(yaml: string): { services: string[]; workloads: string[]; warnings: readonly string[] } {
  const { objects, errors } = parseManifests('m.yaml', yaml);
  assert.deepEqual(errors, []);
  const m = buildMeshModel(objects, CFG);
  const services: string[] = [];
  const workloads: string[] = [];
  for (const [key, a] of m.addresses) {
    if ('service' in a) services.push(`${key} ${a.service.canonical ? 'canonical' : '-'}`);
    else
      workloads.push(
        `${key.replace('Kubernetes/networking.istio.io/ServiceEntry/', 'SE/')} -> ${Object.keys(a.workload.services).join(',')}`,
      );
  }
  return { services: services.sort(), workloads: workloads.sort(), warnings: m.warnings };
}

const cases: { name: string; yaml: string; services: string[]; workloads: string[]; warned?: RegExp }[] = [
  {
    name: 'resolution DNS without endpoints: one implicit workload per host, backing only that host',
    yaml: se('ext', 'apis', ['a.example.com', 'b.example.com'], '  resolution: DNS\n'),
    services: ['ext/a.example.com canonical', 'ext/b.example.com canonical'],
    workloads: ['SE/ext/apis/a.example.com -> ext/a.example.com', 'SE/ext/apis/b.example.com -> ext/b.example.com'],
  },
  {
    name: 'DNS_ROUND_ROBIN and DYNAMIC_DNS get implicit workloads too',
    yaml:
      se('ext', 'rr', ['rr.example.com'], '  resolution: DNS_ROUND_ROBIN\n') +
      se('ext', 'dyn', ['dyn.example.com'], '  resolution: DYNAMIC_DNS\n'),
    services: ['ext/dyn.example.com canonical', 'ext/rr.example.com canonical'],
    workloads: ['SE/ext/dyn/dyn.example.com -> ext/dyn.example.com', 'SE/ext/rr/rr.example.com -> ext/rr.example.com'],
  },
  {
    name: 'STATIC and NONE without endpoints get no workloads',
    yaml:
      se('ext', 'st', ['st.example.com'], '  resolution: STATIC\n') +
      se('ext', 'none', ['none.example.com'], '  resolution: NONE\n'),
    services: ['ext/none.example.com canonical', 'ext/st.example.com canonical'],
    workloads: [],
  },
  {
    name: 'DNS with a workloadSelector is backed by the selected pods, not by its hostname',
    yaml: POD + se('ext', 'sel', ['sel.example.com'], '  resolution: DNS\n  workloadSelector: {labels: {app: vm}}\n'),
    services: ['ext/sel.example.com canonical'],
    workloads: ['Kubernetes//Pod/ext/vm-0 -> ext/sel.example.com'],
  },
  {
    name: 'DNS with endpoints uses the endpoints only, each backing every host',
    yaml: se(
      'ext',
      'eps',
      ['x.example.com', 'y.example.com'],
      '  resolution: DNS\n  endpoints: [{address: x-1.example.net}]\n',
    ),
    services: ['ext/x.example.com canonical', 'ext/y.example.com canonical'],
    workloads: ['SE/ext/eps/x-1.example.net -> ext/x.example.com,ext/y.example.com'],
  },
  {
    name: 'two ServiceEntries for one host in a namespace: the older wins; the younger sends nothing for it',
    yaml:
      se('ext', 'young', ['db.example.com'], '  resolution: DNS\n', at('2024-05-02T00:00:00Z')) +
      se('ext', 'old', ['db.example.com'], '  resolution: DNS\n', at('2024-05-01T00:00:00Z')),
    services: ['ext/db.example.com canonical'],
    workloads: ['SE/ext/old/db.example.com -> ext/db.example.com'],
    warned: /ServiceEntry ext\/young: host db\.example\.com is served by ServiceEntry ext\/old/,
  },
  {
    name: 'equal creation times (or none, as in hand-written manifests): the name decides, never the file order',
    yaml:
      se('ext', 'zeta', ['db.example.com'], '  resolution: DNS\n') +
      se('ext', 'alpha', ['db.example.com'], '  resolution: DNS\n'),
    services: ['ext/db.example.com canonical'],
    workloads: ['SE/ext/alpha/db.example.com -> ext/db.example.com'],
  },
  {
    name: 'one host in two namespaces: each namespace keeps its own, only the oldest is canonical',
    yaml:
      se('team-a', 'db', ['db.example.com'], '  resolution: DNS\n', at('2024-05-03T00:00:00Z')) +
      se('team-b', 'db', ['db.example.com'], '  resolution: DNS\n', at('2024-05-01T00:00:00Z')),
    services: ['team-a/db.example.com -', 'team-b/db.example.com canonical'],
    workloads: [
      'SE/team-a/db/db.example.com -> team-a/db.example.com',
      'SE/team-b/db/db.example.com -> team-b/db.example.com',
    ],
  },
  {
    name: 'a Kubernetes Service always wins over an older ServiceEntry for its hostname, and is the canonical one',
    yaml:
      SVC +
      se('shop', 'shadow', [WEB, 'other.example.com'], '  resolution: DNS\n', at('2000-01-01T00:00:00Z')) +
      se('ext', 'elsewhere', [WEB], '  resolution: DNS\n', at('2000-01-01T00:00:00Z')),
    services: [`ext/${WEB} -`, 'shop/other.example.com canonical', `shop/${WEB} canonical`],
    workloads: [`SE/ext/elsewhere/${WEB} -> ext/${WEB}`, 'SE/shop/shadow/other.example.com -> shop/other.example.com'],
    warned: new RegExp(`ServiceEntry shop/shadow: host ${WEB.replace(/\./g, '\\.')} is served by Service shop/web`),
  },
  {
    name: 'the endpoints of a ServiceEntry that lost a host back only the hosts it kept',
    yaml:
      SVC +
      se('shop', 'both', [WEB, 'keep.example.com'], '  resolution: STATIC\n  endpoints: [{address: 10.20.0.1}]\n'),
    services: ['shop/keep.example.com canonical', `shop/${WEB} canonical`],
    workloads: ['SE/shop/both/10.20.0.1 -> shop/keep.example.com'],
  },
  {
    name: 'a ServiceEntry that lost every host sends no workloads, even listed endpoints',
    yaml: SVC + se('shop', 'gone', [WEB], '  resolution: STATIC\n  endpoints: [{address: 10.20.0.2}]\n'),
    services: [`shop/${WEB} canonical`],
    workloads: [],
  },
  {
    name: 'pods selected by a ServiceEntry that lost its host do not back it',
    yaml:
      POD +
      se('ext', 'old', ['vm.example.com'], '  resolution: STATIC\n', at('2024-01-01T00:00:00Z')) +
      se(
        'ext',
        'new',
        ['vm.example.com'],
        '  resolution: STATIC\n  workloadSelector: {labels: {app: vm}}\n',
        at('2024-06-01T00:00:00Z'),
      ),
    services: ['ext/vm.example.com canonical'],
    workloads: ['Kubernetes//Pod/ext/vm-0 -> '],
  },
];

for (const c of cases) {
  test(`ServiceEntry hosts (istio selectWorkloadServices, serviceEntryWorkloadBuilder): ${c.name}`, () => {
    const r = served(c.yaml);
    assert.deepEqual(r.services, c.services);
    assert.deepEqual(r.workloads, c.workloads);
    if (c.warned !== undefined)
      assert.ok(
        r.warnings.some((w) => c.warned!.test(w)),
        `warning ${String(c.warned)} in ${JSON.stringify(r.warnings)}`,
      );
  });
}

test('an implicit hostname workload is addressed by its host, plain TCP, with the ServiceEntry as its workload', () => {
  const { objects } = parseManifests(
    'm.yaml',
    se(
      'ext',
      'apis',
      ['api.example.com'],
      '  resolution: DNS\n',
      ', labels: {app: apis}',
      '[{number: 443, name: tls, targetPort: 8443}]',
    ),
  );
  const a = buildMeshModel(objects, CFG).addresses.get(
    'Kubernetes/networking.istio.io/ServiceEntry/ext/apis/api.example.com',
  );
  assert.ok(a !== undefined && 'workload' in a);
  const w = a.workload;
  assert.equal(w.hostname, 'api.example.com');
  assert.deepEqual(w.addresses, []);
  assert.equal(w.tunnelProtocol, 0, 'NONE');
  assert.equal(w.workloadName, 'apis');
  assert.equal(w.canonicalName, 'apis', 'from the ServiceEntry labels');
  assert.deepEqual(w.services, { 'ext/api.example.com': [{ servicePort: 443, targetPort: 8443 }] });
  assert.equal(w.locality, undefined);
});
