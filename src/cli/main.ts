#!/usr/bin/env -S node --min-semi-space-size=16 --initial-old-space-size=64
// The flags are DATA_PATH_NODE_FLAGS (src/lib/node-flags.ts); a shebang cannot import them.
import { Command, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { VERSION, ISTIO_COMPAT } from '../lib/version.js';

/**
 * Each command's module, imported only when that command runs: `amesh ztunnel` loads ztunnel's code and none of
 * istiod's, the API server's or the Kubernetes client's, which a node proxy's memory should not carry. Without a
 * known command (help, or a mistyped name) every module is loaded, so the help lists all and commander can
 * suggest the closest name.
 */
const COMMANDS: Readonly<Record<string, () => Promise<CommandUnknownOpts[]>>> = {
  ztunnel: async () => [(await import('./ztunnel.js')).ztunnelCommand()],
  proxy: async () => [(await import('./proxy.js')).proxyCommand()],
  waypoint: async () => [(await import('./waypoint.js')).waypointCommand()],
  istiod: async () => [(await import('./istiod.js')).istiodCommand()],
  apiserver: async () => [(await import('./apiserver.js')).apiserverCommand()],
  'controller-manager': async () => [(await import('./controller-manager.js')).controllerManagerCommand()],
  kubelet: async () => [(await import('./kubelet.js')).kubeletCommand()],
  scheduler: async () => [(await import('./scheduler.js')).schedulerCommand()],
  'cluster-dns': async () => [(await import('./cluster-dns.js')).clusterDnsCommand()],
  'cni-agent': async () => [(await import('./cni-agent.js')).cniAgentCommand()],
  manifest: async () => [(await import('./manifest.js')).manifestCommand()],
  install: async () => [(await import('./install.js')).installCommand()],
  uninstall: async () => [(await import('./install.js')).uninstallCommand()],
  up: async () => [(await import('./up.js')).upCommand()],
  down: async () => [(await import('./up.js')).downCommand()],
  exec: async () => [(await import('./exec.js')).execCommand()],
  logs: async () => [(await import('./logs.js')).logsCommand()],
  echo: async () => [(await import('./echo.js')).echoCommand()],
  demo: async () => [(await import('./demo.js')).demoCommand()],
  x: async () => [(await import('./x.js')).xCommand()],
};

const program = new Command('amesh')
  .description("amesh: Istio's ambient mode in TypeScript")
  .version(VERSION, '--version')
  .enablePositionalOptions();
program
  .command('version')
  .description('print the amesh version')
  .action(() => {
    process.stdout.write(`amesh ${VERSION} (Istio ${ISTIO_COMPAT} wire protocols, node ${process.version})\n`);
  });
/** The command modules a run needs: none to print the version, the named command's, or every one. */
function modulesFor(first: string): (() => Promise<CommandUnknownOpts[]>)[] {
  if (first === 'version' || first === '--version') return [];
  const named = COMMANDS[first];
  return named === undefined ? Object.values(COMMANDS) : [named];
}
for (const load of modulesFor(process.argv[2] ?? '')) for (const c of await load()) program.addCommand(c);
await program.parseAsync(process.argv);
