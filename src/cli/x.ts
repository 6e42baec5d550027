import { Command } from '@commander-js/extra-typings';
import { writePluginCaDir } from '../lib/pki/certificate-authority.js';
import { readFile } from 'node:fs/promises';
import { MeshError } from '../lib/errors.js';
import { CniRuntime, parseNetworkConfigList } from '../up/cni-runtime.js';
import { extAuthzOptions } from '../extauthz/ext-authz-options.js';
import { goLogLine } from '../extauthz/go-log-line.js';
import { onStopSignal } from '../lib/stop-signals.js';
import { fatal } from './fatal.js';

/** Experimental and helper commands. */
export function xCommand(): Command {
  const x = new Command('x').description('helper and experimental commands');
  x.command('create-ca')
    .description(
      'write a new Istio plug-in CA directory (root + intermediate): root-cert.pem, ca-cert.pem, ca-key.pem (0600), cert-chain.pem; refuses a directory that already holds any of them',
    )
    .argument('<dir>', 'directory to create')
    .option('--trust-domain <td>', 'trust domain', 'cluster.local')
    .action(async (dir, o) => {
      try {
        await writePluginCaDir(dir, o.trustDomain);
        process.stdout.write(`wrote plug-in CA files to ${dir}\n`);
      } catch (e) {
        fatal(e);
      }
    });
  x.command('cni')
    .description(
      "run a CNI network configuration list for one sandbox, as a container runtime does (cnitool's job): ADD prints the result, DEL and CHECK print nothing",
    )
    .argument('<command>', 'ADD, DEL or CHECK')
    .requiredOption('--conflist <file>', 'network configuration list (JSON: cniVersion, name, plugins)')
    .requiredOption('--netns <path>', "the sandbox's network namespace, e.g. /run/netns/pod1")
    .requiredOption('--container-id <id>', 'the sandbox id the plugins key their state by')
    .option('--ifname <name>', 'interface name inside the sandbox', 'eth0')
    .option('--args <pairs>', 'CNI_ARGS, e.g. K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p', '')
    .option('--cni-path <dirs>', 'plugin directories, colon-separated', '/usr/lib/cni:/opt/cni/bin')
    .option('--cache-dir <dir>', 'where ADD results are kept for DEL and CHECK', '.amesh/cni-cache')
    .option('--in-netns <path>', 'run the plugins inside this network namespace (a node)')
    .action(async (command, o) => {
      try {
        const verb = command.toUpperCase();
        if (verb !== 'ADD' && verb !== 'DEL' && verb !== 'CHECK')
          throw new MeshError('AMESH_ERR_CONFIG', `command "${command}" must be ADD, DEL or CHECK`);
        const list = parseNetworkConfigList(await readFile(o.conflist, 'utf8'), o.conflist);
        const args = Object.fromEntries(
          o.args
            .split(';')
            .filter((kv) => kv !== '')
            .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as const),
        );
        const rt = new CniRuntime({
          pluginDirs: o.cniPath.split(':').filter((d) => d !== ''),
          cacheDir: o.cacheDir,
          inNetns: o.inNetns,
        });
        const at = { containerId: o.containerId, netns: o.netns, ifName: o.ifname, args };
        if (verb === 'ADD') process.stdout.write(JSON.stringify(await rt.add(list, at), null, 2) + '\n');
        else if (verb === 'DEL') await rt.del(list, at);
        else await rt.check(list, at);
      } catch (e) {
        fatal(e);
      }
    });
  x.command('extauthz')
    .description(
      "Istio's sample ext_authz server (samples/extauthz): an HTTP check, and Envoy's gRPC envoy.service.auth.v3 Check; allows a request whose x-ext-authz header is allow (over gRPC, one without the header from --allow_service_account's principal), denies others with 403; prints `listening http <port> grpc <port>` once both listen",
    )
    .option('--http <port>', 'HTTP check port (0: the kernel chooses)', '8000')
    .option('--grpc <port>', 'gRPC check port (0: the kernel chooses)', '9000')
    .option(
      '--allow_service_account <name>',
      'service account whose source principal (spiffe://.../sa/<name>) a gRPC check without the header allows',
      'a',
    )
    .option('--address <ip>', 'listen on this address only (default: all addresses)')
    .action(async (o) => {
      try {
        const options = extAuthzOptions(o);
        // Loaded here: grpc-js is not for `amesh x`'s other commands to carry.
        const { startExtAuthzServer } = await import('../extauthz/ext-authz-server.js');
        const s = await startExtAuthzServer(options, (line) => process.stderr.write(goLogLine(line)));
        process.stdout.write(`listening http ${s.httpPort} grpc ${s.grpcPort}\n`);
        onStopSignal(() => void s.close().then(() => process.exit(0)));
      } catch (e) {
        fatal(e);
      }
    });
  return x;
}
