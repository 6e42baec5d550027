import type { IncrementalMeshModel, ModelChanges } from '../model/incremental-mesh-model.js';
import type { Snapshot } from './ads-server.js';
import {
  ADDRESS_TYPE,
  AUTHORIZATION_TYPE,
  addressResource,
  authorizationResource,
  type XdsResource,
} from './convert.js';
import { WAYPOINT_TYPE, waypointResource } from './waypoint-resource.js';

/**
 * The encoded resources of a model, kept in step with it: only the names a model update changed are encoded
 * (and hashed for their version) again, so one object's change costs one object's encoding.
 */
export class XdsSnapshot {
  private readonly addresses = new Map<string, XdsResource>();
  private readonly authorizations = new Map<string, XdsResource>();
  private readonly waypoints = new Map<string, XdsResource>();
  /** The live snapshot: the same maps, updated in place by `apply`. */
  readonly snapshot: Snapshot = new Map([
    [ADDRESS_TYPE, this.addresses],
    [AUTHORIZATION_TYPE, this.authorizations],
    [WAYPOINT_TYPE, this.waypoints],
  ]);

  constructor(private readonly model: IncrementalMeshModel) {}

  /** Encodes what `changes` names; returns those names per type (what `AdsServer.update` needs to compare). */
  apply(changes: ModelChanges): ReadonlyMap<string, ReadonlySet<string>> {
    for (const name of changes.addresses) {
      const a = this.model.address(name);
      if (a === undefined) this.addresses.delete(name);
      else this.addresses.set(name, addressResource(name, a));
    }
    for (const name of changes.authorizations) {
      const a = this.model.authorization(name);
      if (a === undefined) this.authorizations.delete(name);
      else this.authorizations.set(name, authorizationResource(name, a));
    }
    for (const name of changes.waypoints) {
      const w = this.model.waypoint(name);
      if (w === undefined) this.waypoints.delete(name);
      else this.waypoints.set(name, waypointResource(name, w));
    }
    return new Map([
      [ADDRESS_TYPE, changes.addresses],
      [AUTHORIZATION_TYPE, changes.authorizations],
      [WAYPOINT_TYPE, changes.waypoints],
    ]);
  }

  get size(): { addresses: number; authorizations: number; waypoints: number } {
    return { addresses: this.addresses.size, authorizations: this.authorizations.size, waypoints: this.waypoints.size };
  }
}
