import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../lib/errors.js';
import { loadWaypointConfig } from './waypoint-config.js';

/** The environment Istio's waypoint template gives the container (downward API values filled in). */
const TEMPLATE_ENV = {
  POD_NAME: 'waypoint-6d9c-x2',
  POD_NAMESPACE: 'shop',
  INSTANCE_IP: '10.244.1.7',
  CA_ADDR: 'istiod.istio-system.svc:15012',
  PROXY_CONFIG: '{"discoveryAddress":"istiod.istio-system.svc:15012"}',
  ISTIO_META_NODE_NAME: 'node2',
  ISTIO_META_CLUSTER_ID: 'Kubernetes',
  TRUST_DOMAIN: 'cluster.local',
  ISTIO_META_WORKLOAD_NAME: 'waypoint',
};

test("the template's env and flags: istiod for xDS and CA at Istio's mount paths, the pod's uid, Istio's log levels", () => {
  const c = loadWaypointConfig({ log_output_level: 'default:debug', log_as_json: true }, TEMPLATE_ENV);
  assert.equal(c.podUid, 'Kubernetes//Pod/shop/waypoint-6d9c-x2');
  assert.equal(c.instanceIp, '10.244.1.7');
  assert.equal(c.gateway, 'shop/waypoint', 'its resource from istiod is named after its Gateway');
  assert.equal(c.ztunnel.xdsAddress, 'https://istiod.istio-system.svc:15012');
  assert.deepEqual(c.ztunnel.ca, { t: 'istiod', address: 'https://istiod.istio-system.svc:15012' });
  assert.equal(c.ztunnel.xdsRootCa, '/var/run/secrets/istio/root-cert.pem');
  assert.equal(c.ztunnel.authToken, '/var/run/secrets/tokens/istio-token');
  assert.equal(c.ztunnel.nodeName, 'node2');
  assert.equal(c.ztunnel.logFormat, 'json');
  assert.equal(c.ztunnel.logLevel, 'debug');
  assert.equal(c.ztunnel.readinessAddress.port, 15021);
  assert.equal(c.ztunnel.metricsAddress.port, 15020);
  assert.ok(Object.isFrozen(c));
});

test('run outside its Deployment (no POD_NAME), the proxy says which variable is missing and where it comes from', () => {
  const env = { ...TEMPLATE_ENV, POD_NAME: '' };
  assert.throws(
    () => loadWaypointConfig({}, env),
    (e) =>
      isMeshError(e, 'AMESH_ERR_CONFIG') && /POD_NAME is not set: the waypoint's Deployment sets it/.test(e.message),
  );
  assert.throws(
    () => loadWaypointConfig({}, { ...TEMPLATE_ENV, PROXY_CONFIG: '{not json' }),
    (e) => isMeshError(e, 'AMESH_ERR_CONFIG') && /PROXY_CONFIG is not JSON/.test(e.message),
  );
});
