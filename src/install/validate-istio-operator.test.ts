import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../lib/errors.js';
import { mergeIstioOperator } from './istio-operator.js';
import { parseSetFlag } from './set-flag.js';

const refused = (sets: string[], message: string): void =>
  assert.throws(
    () => mergeIstioOperator([], sets.map(parseSetFlag)),
    (e) => isMeshError(e, 'INSTALL_ERR_VALUES') && e.message === message,
    message,
  );

test('an unknown value is refused as istioctl refuses it, naming the field, its message and its path', () => {
  refused(
    ['values.global.proxy.foo=bar'],
    'could not unmarshal: error unmarshaling JSON: while decoding JSON: unknown field "foo" in istio.operator.v1alpha1.ProxyConfig (at spec.values.global.proxy.foo)',
  );
  refused(
    ['values.cni.foo=bar'],
    'could not unmarshal: error unmarshaling JSON: while decoding JSON: unknown field "foo" in istio.operator.v1alpha1.CNIConfig (at spec.values.cni.foo)',
  );
  refused(
    ['values.pilot.replicas=2'],
    'could not unmarshal: error unmarshaling JSON: while decoding JSON: unknown field "replicas" in istio.operator.v1alpha1.PilotConfig (at spec.values.pilot.replicas)',
  );
  refused(
    ['meshConfig.trustDomian=x'],
    'could not unmarshal: error unmarshaling JSON: while decoding JSON: unknown field "trustDomian" in istio.mesh.v1alpha1.MeshConfig (at spec.meshConfig.trustDomian)',
  );
  refused(['foo=bar'], 'could not unmarshal: json: unknown field "foo" (at spec.foo)');
  refused(
    ['components.cni.enable=true'],
    'could not unmarshal: json: unknown field "enable" (at spec.components.cni.enable)',
  );
});

test('ztunnel values are checked against the ztunnel chart’s, which istioctl leaves unchecked', () => {
  refused(
    ['values.ztunnel.logLevl=debug'],
    'could not unmarshal: error unmarshaling JSON: while decoding JSON: unknown field "logLevl" in the ztunnel chart values (at spec.values.ztunnel.logLevl)',
  );
  mergeIstioOperator([], ['values.ztunnel.logLevel=debug', 'values.ztunnel.env.A=1'].map(parseSetFlag));
});

test('mistyped values are refused: a word for a number, a number for a boolean, a value outside an enum', () => {
  refused(
    ['values.pilot.replicaCount=two'],
    'could not unmarshal: error unmarshaling JSON: while decoding JSON: invalid value for uint32 field replicaCount: "two" (at spec.values.pilot.replicaCount)',
  );
  refused(
    ['components.cni.enabled=1'],
    'could not unmarshal: json: invalid value for bool field enabled: 1 (at spec.components.cni.enabled)',
  );
  refused(
    ['values.global.resourceScope=some'],
    'could not unmarshal: error unmarshaling JSON: while decoding JSON: invalid value for enum field resourceScope: "some" (one of undefined, all, cluster, namespace) (at spec.values.global.resourceScope)',
  );
});

test('the values amesh renders are all known, meshConfig by its JSON or proto name', () => {
  mergeIstioOperator(
    [],
    [
      'values.global.hub=h',
      'values.global.tag=t',
      'values.global.istioNamespace=istio-system',
      'values.global.proxy.clusterDomain=example.local',
      'values.global.caName=c',
      'values.global.sds.token.aud=aud',
      'meshConfig.trust_domain=example.org',
      'values.pilot.env.PILOT_X=1',
      'values.pilot.autoscaleEnabled=false',
      'values.pilot.resources.requests.cpu=1',
      'values.pilot.image=my/istiod',
      'values.cni.cniBinDir=/bin',
      'values.cni.cniConfDir=/etc/cni',
      'values.cni.ambient.dnsCapture=false',
      'values.ztunnel.image=z',
      'values.ztunnel.resources.limits.memory=1Gi',
    ].map(parseSetFlag),
  );
});
