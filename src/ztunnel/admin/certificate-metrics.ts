import { Counter, Gauge, type MetricsRegistry } from './prom-client-core.js';
import type { SecretManager } from '../identity/secret-manager.js';

/** Istio's `request_type` value for a CSR (istio pkg/monitoring: `monitoring.CSR`). */
const CSR = 'csr';

/**
 * Certificate state as metrics. ztunnel exports none; these follow Istio's pilot-agent, which keeps the workload
 * certificates of a sidecar (istio security/pkg/nodeagent/cache/monitoring.go, prefixed `istio_agent_` as the agent
 * registers them):
 * - `istio_agent_cert_expiry_seconds{resource_name}`: seconds until the certificate expires (negative once expired);
 *   here one series per SPIFFE identity this ztunnel holds a certificate for.
 * - `istio_agent_num_outgoing_requests_total{request_type="csr"}` and
 *   `istio_agent_num_failed_outgoing_requests_total{request_type="csr"}`: CSRs sent to the CA and those that failed
 *   (Istio's `num_outgoing_requests` / `num_failed_outgoing_requests` counters).
 * - `istio_agent_cert_last_error_timestamp_seconds{resource_name}` (amesh's, in the same family): when the last
 *   fetch for that identity failed, 0 if none has; the error itself is in `/config_dump` `certificates[].state`.
 */
export function registerCertificateMetrics(registry: MetricsRegistry, secrets: SecretManager): void {
  const registers = [registry];
  const sent = new Counter({
    name: 'istio_agent_num_outgoing_requests_total',
    help: 'Number of total outgoing requests (e.g. to a token exchange server, CA, etc.)',
    labelNames: ['request_type'],
    registers,
  });
  const failed = new Counter({
    name: 'istio_agent_num_failed_outgoing_requests_total',
    help: 'Number of failed outgoing requests (e.g. to a token exchange server, CA, etc.)',
    labelNames: ['request_type'],
    registers,
  });
  secrets.on('updated', () => sent.inc({ request_type: CSR }));
  secrets.on('failed', () => {
    sent.inc({ request_type: CSR });
    failed.inc({ request_type: CSR });
  });
  new Gauge({
    name: 'istio_agent_cert_expiry_seconds',
    help: 'The time remaining, in seconds, before the certificate chain will expire. A negative value indicates the cert is expired.',
    labelNames: ['resource_name'],
    registers,
    collect() {
      this.reset();
      for (const c of secrets.snapshot())
        if (c.cert !== undefined)
          this.set({ resource_name: c.identity }, (c.cert.notAfter.getTime() - Date.now()) / 1000);
    },
  });
  new Gauge({
    name: 'istio_agent_cert_last_error_timestamp_seconds',
    help: 'When the last certificate fetch for this identity failed (Unix seconds), 0 if none has.',
    labelNames: ['resource_name'],
    registers,
    collect() {
      this.reset();
      for (const c of secrets.snapshot())
        this.set({ resource_name: c.identity }, c.lastError === undefined ? 0 : c.lastError.at.getTime() / 1000);
    },
  });
}
