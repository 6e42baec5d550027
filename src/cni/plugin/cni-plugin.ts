/**
 * One run of amesh-cni, the chained CNI plugin for ambient capture (Istio's `istio-cni` plugin, istio
 * cni/cmd/istio-cni/main.go and cni/pkg/plugin): environment and stdin in, the text for stdout and an exit code out,
 * never an exception. The order of checks is the reference skeleton's (containernetworking/cni pkg/skel/skel.go):
 * environment, then the config's JSON and name, then its version. DEL, CHECK, GC and STATUS have nothing to undo or
 * verify (Istio's are no-ops: the node agent un-enrolls pods from its informers), so they succeed without contacting
 * anything; only ADD reads the plugin's own fields.
 */
import { MeshError } from '../../lib/errors.js';
import { parseCniEnv } from './cni-env.js';
import { cniErrorResult } from './cni-error-result.js';
import { LATEST_CNI_VERSION, versionResult } from './cni-version.js';
import { cmdAdd, type AddDeps } from './cmd-add.js';
import { decodeNetworkConfig, parseNetworkConfig } from './network-config.js';

export interface CniOutcome {
  /** Exactly what the plugin prints on stdout (empty for a DEL, CHECK, GC or STATUS that succeeded). */
  readonly stdout: string;
  readonly exitCode: 0 | 1;
}

export async function runCniPlugin(
  env: Readonly<Record<string, string | undefined>>,
  readStdin: () => Promise<string>,
  deps: AddDeps,
): Promise<CniOutcome> {
  // An error result carries the config's cniVersion once stdin has one, else the newest this plugin speaks.
  let cniVersion: string = LATEST_CNI_VERSION;
  try {
    const cni = parseCniEnv(env);
    let stdin: string;
    try {
      stdin = await readStdin();
    } catch (e) {
      throw new MeshError('CNI_ERR_STDIN', `cannot read the network config from stdin: ${(e as Error).message}`, {
        cause: e,
      });
    }
    if (cni.command === 'VERSION') return { stdout: JSON.stringify(versionResult(stdin)), exitCode: 0 };
    const fields = decodeNetworkConfig(stdin);
    if (typeof fields['cniVersion'] === 'string') cniVersion = fields['cniVersion'];
    const net = parseNetworkConfig(fields, cni.command);
    if (cni.command !== 'ADD') return { stdout: '', exitCode: 0 };
    return { stdout: JSON.stringify(await cmdAdd(cni, net, deps)), exitCode: 0 };
  } catch (e) {
    const result = cniErrorResult(e, cniVersion);
    deps.log.error({ code: result.code }, result.details);
    return { stdout: JSON.stringify(result), exitCode: 1 };
  }
}
