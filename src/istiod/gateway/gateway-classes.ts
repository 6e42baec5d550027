/**
 * The Gateway controllers istiod implements and the classes it creates for them (istio
 * `pilot/pkg/config/kube/gatewaycommon/classinfo.go`, `pkg/config/constants`): `istio.io/mesh-controller` for
 * waypoints (class `istio-waypoint`) and `istio.io/gateway-controller` for ingress gateways (class `istio`).
 */
import type { ClassTemplate } from './gateway-template.js';

export const MESH_CONTROLLER = 'istio.io/mesh-controller';
export const GATEWAY_CONTROLLER = 'istio.io/gateway-controller';

export interface ControllerClass {
  /** The class istiod creates when it is missing, and its description. */
  readonly builtinClass: string;
  readonly description: string;
  readonly template: ClassTemplate;
  /** The `status.addresses` types reported (a waypoint reports both, Istio's other classes a hostname). */
  readonly addressTypes: 'both' | 'hostname';
}

export const CONTROLLER_CLASSES: ReadonlyMap<string, ControllerClass> = new Map([
  [
    MESH_CONTROLLER,
    {
      builtinClass: 'istio-waypoint',
      description: 'The default Istio waypoint GatewayClass',
      template: {
        template: 'waypoint',
        controllerLabel: 'istio.io-mesh-controller',
        nameSuffix: false,
        defaultServiceType: 'ClusterIP',
      },
      addressTypes: 'both',
    },
  ],
  [
    GATEWAY_CONTROLLER,
    {
      builtinClass: 'istio',
      description: 'The default Istio GatewayClass',
      template: {
        template: 'kube-gateway',
        controllerLabel: 'istio.io-gateway-controller',
        nameSuffix: true,
        defaultServiceType: 'LoadBalancer',
      },
      addressTypes: 'hostname',
    },
  ],
]);
