/**
 * The Gateway API route kinds istiod's Gateway controllers read, by the plural of their API path
 * (`/apis/gateway.networking.k8s.io/v1/<plural>`).
 *
 * TLSRoute and TCPRoute reached v1 later than the others: a cluster with an older Gateway API release serves no v1
 * path for them (or has no CRD at all), so a controller does not wait for their informers to sync, only for the API
 * to say it does not serve them. Their objects reach it through the informer's handlers once their CRD is installed,
 * as istio's delayed informers start once their CRD appears and count as synced until then
 * (istio `pkg/kube/kclient/delayed.go`).
 */
export interface RouteKind {
  readonly kind: 'HTTPRoute' | 'GRPCRoute' | 'TLSRoute' | 'TCPRoute';
  readonly plural: string;
  /** Whether a controller goes on without it while the API does not serve it. */
  readonly optional: boolean;
}

export const ROUTE_KINDS: readonly RouteKind[] = [
  { kind: 'HTTPRoute', plural: 'httproutes', optional: false },
  { kind: 'GRPCRoute', plural: 'grpcroutes', optional: false },
  { kind: 'TLSRoute', plural: 'tlsroutes', optional: true },
  { kind: 'TCPRoute', plural: 'tcproutes', optional: true },
];
