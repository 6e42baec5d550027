/**
 * The flags istioctl's manifest generate, install and uninstall share (istio operator/cmd/mesh/root.go,
 * manifest-generate.go): repeatable `-s/--set path=value` and `-f/--filename FILE`, read into the generator's inputs.
 */
import type { Command, OptionValues } from '@commander-js/extra-typings';
import { fileNames, readInputFiles } from '../install/input-files.js';
import type { GenerateInputs } from '../install/generate-manifest.js';
import { parseSetFlag } from '../install/set-flag.js';

const collect = (v: string, prev: string[]): string[] => [...prev, v];

/** Adds --set and --filename to `cmd`. */
export function withInputFlags<A extends unknown[], O extends OptionValues>(cmd: Command<A, O>) {
  return cmd
    .option(
      '-s, --set <path=value>',
      'override an IstioOperator value, e.g. --set profile=ambient, --set components.cni.enabled=true, --set meshConfig.trustDomain=example.org (repeatable; later wins)',
      collect,
      [] as string[],
    )
    .option(
      '-f, --filename <file>',
      'IstioOperator file (repeatable, or comma-separated; - is stdin); --set flags apply over them',
      collect,
      [] as string[],
    );
}

/** The generator's inputs from the flags. */
export async function generateInputs(o: { set: string[]; filename: string[] }): Promise<GenerateInputs> {
  const sets = o.set.map(parseSetFlag);
  return { files: await readInputFiles(fileNames(o.filename)), sets };
}
