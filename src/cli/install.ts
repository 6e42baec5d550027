import { Command, type OptionValues } from '@commander-js/extra-typings';
import { createInterface } from 'node:readline/promises';
import { ClusterClient } from '../install/cluster-client.js';
import { generateManifest } from '../install/generate-manifest.js';
import { mergeIstioOperator } from '../install/istio-operator.js';
import { Installer, profileName } from '../install/installer.js';
import { ProgressLog } from '../install/progress-log.js';
import { parseSetFlag } from '../install/set-flag.js';
import {
  ALL_RESOURCES_REMOVED_WARNING,
  NO_RESOURCES_REMOVED_WARNING,
  objectsToRemove,
  removeObjects,
} from '../install/uninstaller.js';
import { getString } from '../install/value-tree.js';
import { goString } from '../install/chart-helpers.js';
import { fileNames, readInputFiles } from '../install/input-files.js';
import { kubeConfigOf, withKubeconfigFlags } from './cluster-flags.js';
import { parseDuration } from '../lib/duration.js';
import { MeshError } from '../lib/errors.js';
import { VERSION } from '../lib/version.js';
import { fatal } from './fatal.js';
import { generateInputs, withInputFlags } from './install-flags.js';

/** istioctl's default --readiness-timeout. */
const READINESS_TIMEOUT = '5m';

/** istioctl's Confirm: asks until y/yes or n/no; end of input is no. */
async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    for (;;) {
      const answer = (await rl.question(`${question} `).catch(() => 'n')).trim().toUpperCase();
      if (answer === 'Y' || answer === 'YES') return true;
      if (answer === 'N' || answer === 'NO') return false;
    }
  } finally {
    rl.close();
  }
}

function cancelled(): never {
  process.stdout.write('Cancelled.\n');
  process.exit(1);
}

/** The cluster flags install and uninstall share. */
function withClusterFlags<A extends unknown[], O extends OptionValues>(cmd: Command<A, O>) {
  return withKubeconfigFlags(cmd)
    .option('-y, --skip-confirmation', 'do not ask for confirmation')
    .option('--dry-run', 'show what would change, changing nothing');
}

/** `amesh install`: renders as `amesh manifest generate` and applies the objects to a cluster, as `istioctl install`. */
export function installCommand(): Command {
  return withInputFlags(withClusterFlags(new Command('install')))
    .alias('apply')
    .description(
      "install or reconfigure Istio's mesh on a cluster (amesh's istiod, ingress gateway, node agent and ztunnel, as the profile says)",
    )
    .option(
      '--readiness-timeout <duration>',
      'how long to wait for the objects of each component to be ready',
      READINESS_TIMEOUT,
    )
    .action(async (o) => {
      try {
        const readinessTimeoutMs = parseDuration(o.readinessTimeout, '--readiness-timeout');
        const manifest = generateManifest(await generateInputs(o));
        const client = new ClusterClient(kubeConfigOf(o));
        const profile = profileName(manifest.iop);
        if (o.dryRun !== true && o.skipConfirmation !== true) {
          const ok = await confirm(
            `This will install the Istio ${VERSION} profile "${profile}" into the cluster. Proceed? (y/N)`,
          );
          if (!ok) cancelled();
        }
        const progress = new ProgressLog(process.stdout);
        await new Installer({
          client,
          manifest,
          progress,
          readinessTimeoutMs,
          dryRun: o.dryRun === true,
          onAction:
            o.dryRun === true
              ? (action, id) =>
                  process.stdout.write(`  ${action === 'unchanged' ? 'unchanged' : `would be ${action}`}: ${id}\n`)
              : undefined,
        }).run();
        if (profile === 'ambient')
          process.stdout.write('The ambient profile has been installed successfully, enjoy Istio without sidecars!\n');
      } catch (e) {
        fatal(e);
      }
    });
}

/** `amesh uninstall`: removes what `amesh install` installed, found by its labels, as `istioctl uninstall`. */
export function uninstallCommand(): Command {
  return withClusterFlags(new Command('uninstall'))
    .description(
      'remove an install of Istio from a cluster (by revision or IstioOperator file, or everything with --purge)',
    )
    .option('--purge', 'delete every object an install labelled, CRDs included, whatever its revision')
    .option('-r, --revision <name>', 'the control plane revision to remove')
    .option('-f, --filename <file>', 'the IstioOperator file of the install to remove')
    .option(
      '-s, --set <path=value>',
      'an IstioOperator value of the install to remove, e.g. --set revision=canary (repeatable)',
      (v: string, prev: string[]) => [...prev, v],
      [] as string[],
    )
    .action(async (o) => {
      try {
        const sets = o.set.map(parseSetFlag);
        const setRevision = sets.find((s) => s.path.join('.') === 'spec.revision')?.value;
        const revision = o.revision ?? (setRevision === undefined ? undefined : goString(setRevision));
        if (revision === undefined && o.filename === undefined && o.purge !== true)
          throw new MeshError(
            'AMESH_ERR_CONFIG',
            'at least one of the --revision (or --set revision=<revision>), --filename or --purge flags must be set',
          );
        const iop = mergeIstioOperator(
          await readInputFiles(fileNames(o.filename === undefined ? [] : [o.filename])),
          sets,
        );
        const client = new ClusterClient(kubeConfigOf(o));
        const purge = o.purge === true;
        if (purge && (revision !== undefined || o.filename !== undefined))
          process.stdout.write(
            'Purge uninstall will remove all Istio resources, ignoring the specified revision or operator file\n',
          );
        const found = await objectsToRemove(client, {
          purge,
          revision,
          owner: { name: getString(iop, ['metadata', 'name']), namespace: getString(iop, ['metadata', 'namespace']) },
        });
        if (purge) {
          if (o.dryRun === true || o.skipConfirmation === true)
            process.stdout.write(`${ALL_RESOURCES_REMOVED_WARNING}\n`);
          else if (!(await confirm(`${ALL_RESOURCES_REMOVED_WARNING}\nProceed? (y/N)`))) cancelled();
        } else if (found.length === 0) process.stdout.write(`${NO_RESOURCES_REMOVED_WARNING}\n`);
        await removeObjects(client, found, (line) => process.stdout.write(`${line}\n`), o.dryRun === true);
        new ProgressLog(process.stdout).uninstallComplete();
      } catch (e) {
        fatal(e);
      }
    });
}
