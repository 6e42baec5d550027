/**
 * Istio's well-known ports, and the in-pod packet mark: the numbers its components agree on without configuration, so amesh's ztunnel,
 * node agent, istiod and `amesh up` must agree on them too. The node agent's pod rules redirect to ztunnel's
 * listeners by these numbers (istio `cni/pkg/config/config.go` declares its own copy); ztunnel binds them (ztunnel
 * `src/config.rs`); istiod serves on its two (istio `pilot/cmd/pilot-discovery/app/cmd.go`). Each is named here
 * once, and every user imports it from here.
 */

/** ztunnel's outbound capture: the pod's rules send its apps' outgoing TCP here (istio-cni `ZtunnelOutboundPort`). */
export const OUTBOUND_CAPTURE_PORT = 15001;
/** ztunnel's inbound plaintext: TCP to the pod that is not HBONE (istio-cni `ZtunnelInboundPlaintextPort`). */
export const INBOUND_PLAINTEXT_PORT = 15006;
/** HBONE, mTLS and HTTP/2 CONNECT between ztunnels; the pod's rules let it through (istio-cni `ZtunnelInboundPort`). */
export const HBONE_PORT = 15008;
/** ztunnel's DNS proxy inside each pod, where the pod's DNS is captured to (istio-cni `DNSCapturePort`, ztunnel `DEFAULT_DNS_PORT`). */
export const DNS_PROXY_PORT = 15053;
/** ztunnel's SOCKS5 listener, only with UNSTABLE_ENABLE_SOCKS5 (ztunnel `src/config.rs` `socks5_addr`). */
export const SOCKS5_PORT = 15080;

/** ztunnel's admin server: config_dump, logging, quitquitquit (ztunnel `DEFAULT_ADMIN_PORT`, Envoy's proxyAdminPort). */
export const ZTUNNEL_ADMIN_PORT = 15000;
/** ztunnel's Prometheus metrics (ztunnel `DEFAULT_STATS_PORT`; the chart's containerPort `ztunnel-stats`). */
export const ZTUNNEL_STATS_PORT = 15020;
/** ztunnel's readiness probe, `/healthz/ready` (ztunnel `DEFAULT_READINESS_PORT`). */
export const ZTUNNEL_READINESS_PORT = 15021;

/** istiod's TLS gRPC: xDS and the CA (pilot-discovery `--secureGRPCAddr`; the Service's `https-dns`). */
export const ISTIOD_GRPC_PORT = 15012;
/** istiod's monitoring HTTP: `/metrics`, `/ready`, debug (pilot-discovery `--monitoringAddr`; `http-monitoring`). */
export const ISTIOD_MONITORING_PORT = 15014;
/** istiod's HTTPS webhooks: `/validate` (pilot-discovery `--httpsAddr`; the Service's 443 `https-webhook`). */
export const ISTIOD_WEBHOOK_PORT = 15017;
/** The node agent's Prometheus metrics (istio-cni `--monitoring-port`, istio `cni/pkg/cmd/root.go`). */
export const CNI_MONITORING_PORT = 15014;

/**
 * ztunnel's `SO_MARK` on every socket it makes in a pod (ztunnel `src/config.rs` DEFAULT_INPOD_MARK), which the pod's
 * rules match to let those packets through uncaptured (istio-cni `InpodMark`). ztunnel's PACKET_MARK can change it.
 */
export const INPOD_MARK = 0x539;
