/**
 * Where Istio's node agent listens for ztunnel and ztunnel connects, both DaemonSets mounting `/var/run/ztunnel`:
 * the default of ztunnel's `INPOD_UDS` (ztunnel `src/config.rs`) and of the agent's `ztunnel-uds-address`
 * (Istio `cni/pkg/cmd/root.go`).
 */
export const ZDS_SOCKET_PATH = '/var/run/ztunnel/ztunnel.sock';
