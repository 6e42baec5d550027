import type { LogControl } from '../lib/log.js';
import { Ztunnel } from '../ztunnel/ztunnel.js';
import { GatewayCredentials } from './gateway-credentials.js';
import { GatewayListener } from './gateway-listener.js';
import type { WaypointConfig } from './waypoint-config.js';
import { WaypointListener } from './waypoint-listener.js';
import { WaypointRules } from './waypoint-rules.js';

/**
 * The waypoint proxy (`amesh proxy waypoint`, Istio's `pilot-agent proxy waypoint`): ztunnel's parts (xDS from
 * istiod as node type `waypoint`, its own certificate from istiod's CA, the HBONE pool, metrics on 15020 and
 * readiness on 15021) with one listener, `WaypointListener`, on the pod's IP, and its own resource from istiod (its
 * routes and policies, `WaypointRules`), subscribed to by its workload's name.
 */
export function startWaypointProxy(cfg: WaypointConfig, logs: LogControl): Promise<Ztunnel> {
  const rules = new WaypointRules(cfg.gateway, logs.scope('waypoint'));
  return Ztunnel.start(cfg.ztunnel, logs, {
    nodeType: 'waypoint',
    subscriptions: [rules.subscription()],
    proxies: (ctx, registry) => new WaypointListener(ctx, registry, cfg.podUid, cfg.instanceIp, rules),
  });
}

/**
 * The ingress gateway proxy (`amesh proxy router`, Istio's `pilot-agent proxy router`): the same parts as a
 * waypoint's, as node type `router`, with the listeners of its resource (`GatewayListener`) and their certificates
 * over SDS (`GatewayCredentials`).
 */
export function startGatewayProxy(cfg: WaypointConfig, logs: LogControl): Promise<Ztunnel> {
  const rules = new WaypointRules(cfg.gateway, logs.scope('gateway'));
  const credentials = new GatewayCredentials(rules, logs.scope('sds'));
  return Ztunnel.start(cfg.ztunnel, logs, {
    nodeType: 'router',
    subscriptions: [rules.subscription(), credentials.subscription()],
    proxies: (ctx, registry) => new GatewayListener(ctx, registry, cfg.podUid, cfg.instanceIp, rules, credentials),
  });
}
