import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseLocalConfig } from '../state/local-config.js';
import { ProxyState } from '../state/proxy-state.js';
import { guessInboundService } from './guess-inbound-service.js';

const UID = 'Kubernetes//Pod/shop/web-0';

/** A state with web-0 backing `backs` (`"ns/host": {servicePort: targetPort}`) and the given `services` definitions. */
function stateWith(backs: string, services: string): ProxyState {
  const state = new ProxyState();
  state.apply(
    parseLocalConfig(
      'mesh.yaml',
      `workloads:\n- {uid: ${UID}, name: web-0, namespace: shop, workloadIps: [10.0.0.1], node: n1, services: {${backs}}}\nservices:\n${services}`,
    ),
  );
  return state;
}

const guess = (state: ProxyState, port: number): string | undefined =>
  guessInboundService(state, state.workloadByUid(UID)!, port)?.hostname;

test('plaintext inbound: the service whose target port is the destination port names the connection', () => {
  const state = stateWith(
    'shop/web.shop.svc.cluster.local: {80: 8080}, shop/admin.shop.svc.cluster.local: {9000: 9090}',
    [
      '- {name: web, namespace: shop, hostname: web.shop.svc.cluster.local, ports: {80: 8080}}',
      '- {name: admin, namespace: shop, hostname: admin.shop.svc.cluster.local, ports: {9000: 9090}}',
    ].join('\n'),
  );
  assert.equal(guess(state, 8080), 'web.shop.svc.cluster.local');
  assert.equal(guess(state, 9090), 'admin.shop.svc.cluster.local');
  assert.equal(guess(state, 80), undefined, 'a service port is not a target port: the app is reached on 8080');
  assert.equal(guess(state, 7000), undefined, 'no service has that port: destination_service stays unknown');
});

test("a named target port (0 in the service) matches through this workload's own endpoint port", () => {
  const state = stateWith(
    'shop/web.shop.svc.cluster.local: {80: 8443}',
    '- {name: web, namespace: shop, hostname: web.shop.svc.cluster.local, ports: {80: 0}}',
  );
  assert.equal(guess(state, 8443), 'web.shop.svc.cluster.local');
  assert.equal(guess(state, 8080), undefined);
});

test('a service the workload does not back is never guessed, even with a matching port', () => {
  const state = stateWith(
    '',
    '- {name: other, namespace: shop, hostname: other.shop.svc.cluster.local, ports: {80: 8080}}',
  );
  assert.equal(guess(state, 8080), undefined);
});

test('several matching services: the workload namespace first, then a canonical one, then the lowest namespace/hostname, whatever the order', () => {
  const svc = (ns: string, name: string, canonical: boolean): string =>
    `- {name: ${name}, namespace: ${ns}, hostname: ${name}.${ns}.example, ports: {80: 8080}, canonical: ${String(canonical)}}`;
  const back = (ns: string, name: string): string => `${ns}/${name}.${ns}.example: {80: 8080}`;
  const cases: { services: [string, string, boolean][]; want: string }[] = [
    {
      services: [
        ['other', 'a', true],
        ['shop', 'z', false],
      ],
      want: 'z.shop.example',
    },
    {
      services: [
        ['shop', 'b', false],
        ['shop', 'c', true],
      ],
      want: 'c.shop.example',
    },
    {
      services: [
        ['shop', 'd', true],
        ['shop', 'c', true],
      ],
      want: 'c.shop.example',
    },
    {
      services: [
        ['other', 'b', false],
        ['more', 'x', false],
      ],
      want: 'x.more.example',
    },
  ];
  for (const { services, want } of cases) {
    for (const order of [services, [...services].reverse()]) {
      const state = stateWith(
        order.map(([ns, n]) => back(ns, n)).join(', '),
        order.map(([ns, n, c]) => svc(ns, n, c)).join('\n'),
      );
      assert.equal(guess(state, 8080), want, JSON.stringify(order));
    }
  }
});
