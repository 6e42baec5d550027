/**
 * `amesh waypoint generate|apply|list|status|delete`, as `istioctl waypoint` (istio `istioctl/pkg/waypoint/waypoint.go`):
 * the same flags, messages and columns. `apply` creates the Gateway, or replaces its spec and labels (istioctl applies
 * it server-side); `--wait` and `status` poll the Gateway's Programmed condition once a second, as istioctl does.
 */
import { Command, Option, type OptionValues } from '@commander-js/extra-typings';
import type { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { MeshError } from '../lib/errors.js';
import { render } from '../lib/table.js';
import { kubeConfigOf, withKubeconfigFlags } from './cluster-flags.js';
import { kubeRequest } from '../kube/kube-request.js';
import {
  DEFAULT_WAYPOINT_NAME,
  isProgrammed,
  listRows,
  statusRows,
  waypointGateway,
  waypointsOnly,
  type ListedGateway,
} from '../install/waypoint-gateway.js';
import { REVISION_LABEL, USE_WAYPOINT_LABEL } from '../istiod/model/waypoints.js';
import { fatal } from './fatal.js';

const GATEWAYS = '/apis/gateway.networking.k8s.io/v1';
const WAIT_TIMEOUT_S = 90;

interface Common {
  kubeconfig?: string | undefined;
  context?: string | undefined;
  namespace?: string | undefined;
  name: string;
}

function connect(o: Common): { kc: KubeConfig; namespace: string } {
  const kc = kubeConfigOf(o);
  const namespace = o.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
  return { kc, namespace };
}

/** The API's answer, or a MeshError naming the request and the API's message. */
async function request(kc: KubeConfig, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await kubeRequest(kc, method, path, body);
  if (res.statusCode < 300) return res.body;
  const message = (res.body as { message?: string } | undefined)?.message ?? JSON.stringify(res.body);
  if (res.statusCode === 404 && path.startsWith(GATEWAYS) && /the server could not find/.test(message))
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      `missing Kubernetes Gateway CRDs need to be installed before applying a waypoint: ${message}`,
    );
  throw Object.assign(new MeshError('AMESH_ERR_CONFIG', `${method} ${path}: ${message}`), {
    statusCode: res.statusCode,
  });
}

const gatewaysPath = (ns: string): string =>
  ns === '' ? `${GATEWAYS}/gateways` : `${GATEWAYS}/namespaces/${ns}/gateways`;

async function listGateways(kc: KubeConfig, ns: string): Promise<ListedGateway[]> {
  return ((await request(kc, 'GET', gatewaysPath(ns))) as { items?: ListedGateway[] }).items ?? [];
}

/** Polls once a second until every waypoint in `names` (all when empty) is Programmed; false on timeout. */
async function waitProgrammed(
  kc: KubeConfig,
  ns: string,
  names: readonly string[],
  timeoutS: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutS * 1000;
  for (;;) {
    const gws = waypointsOnly(await listGateways(kc, ns)).filter(
      (g) => names.length === 0 || names.includes(g.metadata?.name ?? ''),
    );
    if (gws.length > 0 && gws.every(isProgrammed)) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** The flags every subcommand takes (istioctl's root and waypoint persistent flags). */
function common<A extends unknown[], O extends OptionValues>(cmd: Command<A, O>) {
  return withKubeconfigFlags(cmd)
    .option('-n, --namespace <ns>', "the namespace (default: the context's, else default)")
    .option('--name <name>', 'name of the waypoint', DEFAULT_WAYPOINT_NAME);
}

const forOption = (): Option<'--for <type>', undefined, undefined, string> =>
  new Option('--for <type>', 'Specify the traffic type [all none service workload] for the waypoint');

export function waypointCommand(): Command {
  const wp = new Command('waypoint').description('Manage waypoint configuration (as istioctl waypoint)');

  common(
    wp
      .command('generate')
      .description('Generate a waypoint configuration')
      .addOption(forOption())
      .option('-r, --revision <rev>', 'The revision to label the waypoint with'),
  ).action((o) => {
    try {
      // Without -n istioctl leaves the namespace out, for kubectl apply -n to choose.
      const namespace = o.namespace ?? '';
      const gw = waypointGateway({ name: o.name, namespace, for: o.for, revision: o.revision });
      if (namespace === '') delete (gw.metadata as { namespace?: string }).namespace;
      process.stdout.write(stringify(gw));
    } catch (e) {
      fatal(e);
    }
  });

  common(
    wp
      .command('apply')
      .description('Apply a waypoint configuration')
      .addOption(forOption())
      .option('-r, --revision <rev>', 'The revision to label the waypoint with')
      .option('--enroll-namespace', 'If set, the namespace will be labeled with the waypoint name')
      .option('--overwrite', 'Overwrite the existing Waypoint used by the namespace')
      .option('-w, --wait', 'Wait for the waypoint to be ready')
      .option('--waypoint-timeout <seconds>', 'Timeout for waiting for waypoint ready', String(WAIT_TIMEOUT_S)),
  ).action(async (o) => {
    try {
      const { kc, namespace } = connect(o);
      const nsPath = `/api/v1/namespaces/${namespace}`;
      const ns = (await request(kc, 'GET', nsPath).catch((e: unknown) => {
        if ((e as { statusCode?: number }).statusCode === 404)
          throw new MeshError('AMESH_ERR_CONFIG', `namespace: ${namespace} not found`);
        throw e;
      })) as { metadata?: { labels?: Record<string, string> } };
      const nsLabels = ns.metadata?.labels ?? {};
      if (o.enrollNamespace === true) {
        if (o.overwrite !== true && (nsLabels[USE_WAYPOINT_LABEL] ?? '') !== '') {
          process.stdout.write(
            `⚠️ Warning: namespace (${namespace}) already has an enrolled Waypoint. Consider adding the \`--overwrite\` flag to your apply command.\n`,
          );
          return;
        }
        if (nsLabels['istio.io/dataplane-mode'] !== 'ambient')
          process.stdout.write(
            `⚠️ Warning: namespace is not enrolled in ambient. Consider running\t\`kubectl label namespace ${namespace} istio.io/dataplane-mode=ambient\`\n`,
          );
      }
      const gw = waypointGateway({ name: o.name, namespace, for: o.for, revision: o.revision });
      const path = `${gatewaysPath(namespace)}/${gw.metadata.name}`;
      const existing = (await request(kc, 'GET', path).catch((e: unknown) => {
        if ((e as { statusCode?: number }).statusCode === 404) return undefined;
        throw e;
      })) as { metadata: { labels?: Record<string, string> } } | undefined;
      if (existing === undefined) await request(kc, 'POST', gatewaysPath(namespace), gw);
      else
        await request(kc, 'PUT', path, {
          ...existing,
          metadata: { ...existing.metadata, labels: { ...existing.metadata.labels, ...gw.metadata.labels } },
          spec: gw.spec,
        });
      process.stdout.write(`✅ waypoint ${namespace}/${gw.metadata.name} applied\n`);
      if (o.wait === true) {
        if (!(await waitProgrammed(kc, namespace, [gw.metadata.name], Number(o.waypointTimeout))))
          throw new MeshError(
            'AMESH_ERR_CONFIG',
            `timed out while waiting for waypoint\t${namespace}/${gw.metadata.name}`,
          );
        process.stdout.write(`✅ waypoint ${namespace}/${gw.metadata.name} is ready!\n`);
      }
      if (o.enrollNamespace === true) {
        await request(kc, 'PUT', nsPath, {
          ...ns,
          metadata: { ...ns.metadata, labels: { ...nsLabels, [USE_WAYPOINT_LABEL]: gw.metadata.name } },
        });
        process.stdout.write(`✅ namespace ${namespace} labeled with "istio.io/use-waypoint: ${gw.metadata.name}"\n`);
      }
    } catch (e) {
      fatal(e);
    }
  });

  common(
    wp
      .command('list')
      .description('List managed waypoint configurations')
      .option('-A, --all-namespaces', 'List all waypoints in all namespaces')
      .addOption(
        new Option('-o, --output <format>', 'output format').choices(['table', 'json', 'yaml']).default('table'),
      ),
  ).action(async (o) => {
    try {
      const { kc, namespace } = connect(o);
      const all = o.allNamespaces === true;
      const gws = waypointsOnly(await listGateways(kc, all ? '' : namespace));
      if (gws.length === 0 && o.output === 'table') {
        process.stdout.write('No waypoints found.\n');
        return;
      }
      const { headers, rows } = listRows(gws, all);
      process.stdout.write(render(o.output, headers, rows, gws));
    } catch (e) {
      fatal(e);
    }
  });

  common(
    wp
      .command('status')
      .description('Show the status of waypoints')
      .option('-A, --all-namespaces', 'Show the status of waypoints in all namespaces')
      .option('--no-wait', 'do not wait for the waypoints to be ready')
      .option('--waypoint-timeout <seconds>', 'Timeout for retrieving status for waypoint', String(WAIT_TIMEOUT_S))
      .addOption(
        new Option('-o, --output <format>', 'output format').choices(['table', 'json', 'yaml']).default('table'),
      ),
  ).action(async (o) => {
    try {
      const { kc, namespace } = connect(o);
      const ns = o.allNamespaces === true ? '' : namespace;
      if (o.wait) await waitProgrammed(kc, ns, [], Number(o.waypointTimeout));
      const gws = waypointsOnly(await listGateways(kc, ns));
      if (gws.length === 0 && o.output === 'table') {
        process.stdout.write('No waypoints found.\n');
        return;
      }
      const { headers, rows } = statusRows(gws, o.allNamespaces === true);
      process.stdout.write(render(o.output, headers, rows, gws));
    } catch (e) {
      fatal(e);
    }
  });

  common(
    wp
      .command('delete')
      .description('Delete a waypoint configuration')
      .argument('[names...]', 'waypoints to delete')
      .option('--all', 'Delete all waypoints in the namespace')
      .option('-r, --revision <rev>', 'Delete the specified version of the waypoint in the namespace'),
  ).action(async (names, o) => {
    try {
      const byFlag = o.all === true || o.revision !== undefined;
      if (byFlag && names.length > 0)
        throw new MeshError('AMESH_ERR_CONFIG', 'cannot specify waypoint names when deleting all waypoints');
      if (!byFlag && names.length === 0)
        throw new MeshError(
          'AMESH_ERR_CONFIG',
          'must specify a waypoint name or delete all using --all or delete specific revision using --revision',
        );
      const { kc, namespace } = connect(o);
      const targets = byFlag
        ? waypointsOnly(await listGateways(kc, namespace))
            .filter((g) => o.revision === undefined || g.metadata?.labels?.[REVISION_LABEL] === o.revision)
            .map((g) => g.metadata?.name ?? '')
        : names;
      for (const name of targets) {
        const res = await kubeRequest(kc, 'DELETE', `${gatewaysPath(namespace)}/${name}`);
        if (res.statusCode === 404) process.stdout.write(`waypoint ${namespace}/${name} not found\n`);
        else if (res.statusCode >= 300)
          throw new MeshError('AMESH_ERR_CONFIG', `delete ${namespace}/${name}: HTTP ${res.statusCode}`);
        else process.stdout.write(`waypoint ${namespace}/${name} deleted\n`);
      }
    } catch (e) {
      fatal(e);
    }
  });
  return wp;
}
