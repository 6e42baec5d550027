#!/usr/bin/env -S node --min-semi-space-size=16
// The flag is DATA_PATH_NODE_FLAGS (src/lib/node-flags.ts); a shebang cannot import it.
import { Command } from '@commander-js/extra-typings';
import { VERSION, ISTIO_COMPAT } from '../lib/version.js';
import { ztunnelCommand } from './ztunnel.js';
import { echoCommand } from './echo.js';
import { xCommand } from './x.js';
import { demoCommand } from './demo.js';
import { istiodCommand } from './istiod.js';
import { apiserverCommand } from './apiserver.js';
import { controllerManagerCommand } from './controller-manager.js';
import { cniAgentCommand } from './cni-agent.js';

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
program.addCommand(ztunnelCommand());
program.addCommand(istiodCommand());
program.addCommand(apiserverCommand());
program.addCommand(controllerManagerCommand());
program.addCommand(cniAgentCommand());
program.addCommand(echoCommand());
program.addCommand(demoCommand());
program.addCommand(xCommand());
await program.parseAsync(process.argv);
