import { Command } from '@commander-js/extra-typings';
import { writePluginCaDir } from '../lib/pki/certificate-authority.js';
import { fatal } from './fatal.js';

/** Experimental and helper commands. */
export function xCommand(): Command {
  const x = new Command('x').description('helper and experimental commands');
  x.command('create-ca')
    .description('write a new Istio plug-in CA directory (root + intermediate): root-cert.pem, ca-cert.pem, ca-key.pem (0600), cert-chain.pem; refuses a directory that already holds any of them')
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
  return x;
}
