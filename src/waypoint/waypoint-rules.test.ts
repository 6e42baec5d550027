import { test } from 'node:test';
import assert from 'node:assert/strict';
import { create } from '@bufbuild/protobuf';
import { anyPack } from '@bufbuild/protobuf/wkt';
import { WaypointSchema } from '../api/amesh/waypoint/v1/waypoint_pb.js';
import { silentLogs } from '../../test/helpers/captured-logs.js';
import { WaypointRules } from './waypoint-rules.js';

test('the config dump names each backend whose DestinationRule traffic policy the proxy applies, and what of it, for an operator asking whether a rule took effect', () => {
  const rules = new WaypointRules('shop/waypoint', silentLogs('test').scope('waypoint'));
  const host = (n: string): string => `${n}.shop.svc.cluster.local`;
  const message = create(WaypointSchema, {
    services: [
      {
        namespace: 'shop',
        hostname: host('web'),
        port: 0,
        routes: [
          {
            name: 'shop/web.0',
            action: {
              case: 'forward',
              value: {
                backends: [
                  {
                    namespace: 'shop',
                    hostname: host('web'),
                    port: 80,
                    weight: 1,
                    subset: 'v2',
                    trafficPolicy: {
                      loadBalancer: { hashKey: { case: 'httpHeaderName', value: 'x-user' } },
                      connectionPool: { maxConnections: 1 },
                    },
                  },
                  { namespace: 'shop', hostname: host('plain'), port: 80, weight: 1 },
                ],
              },
            },
          },
        ],
      },
    ],
    servicePolicies: [
      {
        namespace: 'shop',
        hostname: host('db'),
        port: 5432,
        trafficPolicy: { loadBalancer: { simple: 'ROUND_ROBIN' }, outlierDetection: { consecutive5xxErrors: 3 } },
      },
    ],
  });
  assert.deepEqual(
    rules.subscription().apply([{ name: 'shop/waypoint', resource: anyPack(WaypointSchema, message) }], []),
    [],
  );
  assert.deepEqual((rules.dump() as { trafficPolicies: unknown }).trafficPolicies, {
    [`80|v2|${host('web')}|shop`]: ['consistentHash header', 'connectionPool'],
    [`5432||${host('db')}|shop`]: ['loadBalancer ROUND_ROBIN', 'outlierDetection'],
  });
});
