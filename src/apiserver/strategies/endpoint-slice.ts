import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { child, index, invalid, required } from '../validation/field-errors.js';
import { isDns1123Label, isQualifiedName, isValidPortNum } from '../validation/formats.js';
import { asArray, asNumber, asObject, asString } from '../validation/json-fields.js';
import { immutable } from '../validation/object-meta.js';
import { PROTOCOLS, oneOf } from '../validation/pod-spec.js';
import { nextGeneration, startGeneration } from './generation.js';

/**
 * discovery.k8s.io/v1 EndpointSlices, after k8s.io/kubernetes `pkg/registry/discovery/endpointslice/strategy.go`
 * (generation 1 on create, bumped by any change but metadata other than labels),
 * `pkg/apis/discovery/v1/defaults.go` (a port without a name or protocol gets "" and TCP) and
 * `pkg/apis/discovery/validation/validation.go` (an address type from the enum, immutable; 1 to 100 addresses per
 * endpoint; ports with DNS-label names, valid numbers and protocols).
 */

const ADDRESS_TYPES = ['FQDN', 'IPv4', 'IPv6'];
/** An endpoint may list at most 100 addresses (`maxAddresses`). */
const MAX_ADDRESSES = 100;

function validateEndpointSlice(obj: KubeObject): StatusCause[] {
  const errs = oneOf(obj.addressType, 'addressType', ADDRESS_TYPES);
  (asArray(obj.endpoints) ?? []).forEach((entry, i) => {
    const addresses = asArray(asObject(entry)?.addresses) ?? [];
    const at = child(index('endpoints', i), 'addresses');
    if (addresses.length === 0) errs.push(required(at, 'must contain at least 1 address'));
    else if (addresses.length > MAX_ADDRESSES)
      errs.push(invalid(at, addresses.length, `must contain at most ${MAX_ADDRESSES} addresses`));
  });
  (asArray(obj.ports) ?? []).forEach((entry, i) => {
    const p = asObject(entry) ?? {};
    const at = index('ports', i);
    const name = asString(p.name) ?? '';
    if (name !== '') for (const m of isDns1123Label(name)) errs.push(invalid(child(at, 'name'), name, m));
    const port = asNumber(p.port);
    if (port !== undefined) for (const m of isValidPortNum(port)) errs.push(invalid(child(at, 'port'), port, m));
    if (p.protocol !== undefined) errs.push(...oneOf(p.protocol, child(at, 'protocol'), PROTOCOLS));
    const appProtocol = asString(p.appProtocol);
    if (appProtocol !== undefined)
      for (const m of isQualifiedName(appProtocol)) errs.push(invalid(child(at, 'appProtocol'), appProtocol, m));
  });
  return errs;
}

/** Each port's name and protocol as the API stores them when left out: "" and TCP (`SetDefaults_EndpointPort`). */
function defaultPorts(obj: KubeObject): void {
  for (const entry of asArray(obj.ports) ?? []) {
    const p = asObject(entry);
    if (p === undefined) continue;
    p.name ??= '';
    p.protocol ??= 'TCP';
  }
}

function tracked(o: KubeObject): unknown {
  return { ...o, metadata: o.metadata.labels };
}

export const endpointSliceStrategy: Strategy = {
  prepareForCreate(obj) {
    defaultPorts(obj);
    startGeneration(obj, undefined);
  },
  prepareForUpdate(obj, old) {
    defaultPorts(obj);
    nextGeneration(obj, old, tracked);
  },
  validate: validateEndpointSlice,
  validateUpdate(obj, old) {
    return [...validateEndpointSlice(obj), ...immutable('addressType', obj.addressType ?? '', old.addressType ?? '')];
  },
};
