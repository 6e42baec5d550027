import { Command } from '@commander-js/extra-typings';
import path from 'node:path';
import { LogControl } from '../lib/log.js';
import { ISTIOD_DEFAULTS, loadIstiodConfig } from '../istiod/config.js';
import { Istiod } from '../istiod/istiod.js';
import { LocalIssuer, DEFAULT_TOKEN_TTL_SECONDS } from '../istiod/ca/local-issuer.js';
import { MeshError } from '../lib/errors.js';
import { ISTIOD_GRPC_PORT, ISTIOD_MONITORING_PORT } from '../lib/istio-ports.js';
import { loadKubeConfig } from '../kube/kube-config.js';
import { requestToken } from '../kube/request-token.js';
import { fatal } from './fatal.js';

export function istiodCommand(): Command {
  const cmd = new Command('istiod')
    // `istiod token --state-dir X`: options after the subcommand belong to it, not to `istiod`.
    .enablePositionalOptions()
    .description(
      `run the control plane: certificate authority (and workload discovery) on ${ISTIOD_GRPC_PORT}, monitoring on ${ISTIOD_MONITORING_PORT}`,
    )
    .option(
      '--config-dir <dir>',
      'directory of Kubernetes manifests (Namespace, Pod, Service, AuthorizationPolicy, ...), applied to an embedded API server as kubectl apply --prune would, on start and on every change',
    )
    .option(
      '--kubeconfig <file>',
      'the Kubernetes API to watch, review tokens with and publish istio-ca-root-cert to (default without --config-dir: KUBECONFIG, else the in-cluster service account)',
    )
    .option(
      '--ca-dir <dir>',
      'Istio plug-in CA files (ca-cert.pem, ca-key.pem, root-cert.pem, cert-chain.pem, or tls.crt, tls.key, ca.crt) (default: ROOT_CA_DIR or ./etc/cacerts when it holds them, else a self-signed root kept in the istio-ca-secret Secret with a Kubernetes API, in the state dir with --config-dir)',
    )
    .option(
      '--state-dir <dir>',
      'where the token issuer key, root-cert.pem and (with --config-dir) the generated CA live',
      ISTIOD_DEFAULTS.stateDir,
    )
    .option('--grpc-address <host:port>', 'xDS and CA (gRPC over TLS)', ISTIOD_DEFAULTS.grpcAddress)
    .option('--monitoring-address <host:port>', 'metrics, debug and readiness', ISTIOD_DEFAULTS.monitoringAddress)
    .option(
      '--webhook-address <host:port>',
      'the validation webhook (HTTPS, /validate)',
      ISTIOD_DEFAULTS.webhookAddress,
    )
    .option(
      '--apiserver-address <host:port>',
      `with --config-dir: the embedded Kubernetes API the directory is applied to (kubeconfig in <state-dir>/apiserver) (default: "${ISTIOD_DEFAULTS.apiserverAddress}")`,
    )
    .option('--log-level <level>', 'log level, or scope=level list')
    .action(async (o) => {
      let logs: LogControl | undefined;
      try {
        const cfg = loadIstiodConfig(o);
        logs = new LogControl({ format: cfg.logFormat, level: cfg.logLevel, component: 'istiod' });
        logs.apply(cfg.logLevel);
        const ist = await Istiod.start(cfg, logs);
        const stop = (): void => void ist.stop().then(() => process.exit(0));
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      } catch (e) {
        fatal(e, logs);
      }
    });
  cmd
    .command('token')
    .description(
      "print a service-account token istiod trusts: from the API's TokenRequest with --kubeconfig, else from the local issuer in --state-dir",
    )
    .requiredOption('--namespace <ns>', 'service account namespace')
    .requiredOption('--service-account <sa>', 'service account name')
    .option('--kubeconfig <file>', 'ask this Kubernetes API for the token (TokenRequest)')
    .option('--node <node>', 'node claim, local issuer only (what the CA checks impersonation against)')
    .option('--pod <pod>', 'pod claim; with --kubeconfig the token is bound to this pod (and its node)')
    .option('--audience <aud>', 'audience', 'istio-ca')
    .option('--ttl <seconds>', 'lifetime in seconds', String(DEFAULT_TOKEN_TTL_SECONDS))
    .option('--state-dir <dir>', "istiod's state dir (holds the local issuer's key)", ISTIOD_DEFAULTS.stateDir)
    .action(async (o) => {
      try {
        const ttl = Number(o.ttl);
        if (!Number.isInteger(ttl) || ttl < 1)
          throw new MeshError('AMESH_ERR_CONFIG', '--ttl must be a positive number of seconds');
        let token: string;
        if (o.kubeconfig !== undefined) {
          if (o.node !== undefined)
            throw new MeshError(
              'AMESH_ERR_CONFIG',
              '--node is for the local issuer; with --kubeconfig, name the pod (--pod) and the API adds its node',
            );
          token = await requestToken(loadKubeConfig(o.kubeconfig), {
            namespace: o.namespace,
            serviceAccount: o.serviceAccount,
            pod: o.pod,
            audience: o.audience,
            ttlSeconds: ttl,
          });
        } else {
          const issuer = await LocalIssuer.loadOrCreate(path.resolve(o.stateDir));
          token = await issuer.issue({
            namespace: o.namespace,
            serviceAccount: o.serviceAccount,
            node: o.node,
            pod: o.pod,
            audience: o.audience,
            ttlSeconds: ttl,
          });
        }
        process.stdout.write(token + '\n');
      } catch (e) {
        fatal(e);
      }
    });
  return cmd;
}
