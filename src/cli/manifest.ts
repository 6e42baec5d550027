import { Command } from '@commander-js/extra-typings';
import { writeFile } from 'node:fs/promises';
import { generateManifest } from '../install/generate-manifest.js';
import { manifestYaml } from '../install/manifest-yaml.js';
import { MeshError } from '../lib/errors.js';
import { fatal } from './fatal.js';
import { generateInputs, withInputFlags } from './install-flags.js';

/** `amesh manifest generate`: Istio's install objects as YAML, as `istioctl manifest generate` prints them. */
export function manifestCommand(): Command {
  const manifest = new Command('manifest').description('render the objects an install applies (istioctl manifest)');
  withInputFlags(
    manifest
      .command('generate')
      .description('print the objects `amesh install` would apply, as YAML documents')
      .option('-o, --output <file>', 'write the manifest to this file instead of stdout'),
  ).action(async (o) => {
    try {
      const { sets } = generateManifest(await generateInputs(o));
      const text = manifestYaml(sets.flatMap((s) => s.objects));
      if (o.output === undefined) process.stdout.write(text);
      else
        await writeFile(o.output, text).catch((e: unknown) => {
          throw new MeshError('INSTALL_ERR_FILE', `write manifest to ${o.output}: ${(e as Error).message}`);
        });
    } catch (e) {
      fatal(e);
    }
  });
  return manifest;
}
