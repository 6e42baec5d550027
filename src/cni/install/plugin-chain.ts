/**
 * Our plugin's entry in the node's primary network config, as Istio's installer chains `istio-cni` (istio
 * cni/pkg/install/cniconfig.go insertCNIConfig, install.go Cleanup):
 * - a `.conflist` gets the entry appended to `plugins`; an entry of ours already there is left alone when it is
 *   the one wanted, else it is taken out and the wanted one appended;
 * - a `.conf` (one network) becomes a list named `k8s-pod-network`, cniVersion 0.3.1, of that network (without its
 *   own cniVersion) and the entry, as Istio converts it; the caller writes it as `.conflist`;
 * - removal takes the first entry of ours out of `plugins`.
 *
 * A list is changed by splicing its text (json-span.ts): every byte outside the entry stays as it was, and removing
 * an entry that was appended gives back the file as it was before. The appended entry takes the list's own layout
 * (one line, or the indentation of the elements before it).
 */
import { isDeepStrictEqual } from 'node:util';
import { arrayElements, objectMembers, rootSpan, type Span } from './json-span.js';
import { parseNetworkConfigFile, type NetworkConfigFile } from './network-config-file.js';

/** The `type` of our entry: the plugin executable's name in the CNI bin dir. */
export const PLUGIN_TYPE = 'amesh-cni';

/** What Istio's installer names a network it makes from a `.conf`, and the version it gives it. */
const CONVERTED_LIST_NAME = 'k8s-pod-network';
const CONVERTED_LIST_VERSION = '0.3.1';

type Entry = Readonly<Record<string, unknown>>;

const ourIndex = (plugins: readonly Record<string, unknown>[]): number =>
  plugins.findIndex((p) => p['type'] === PLUGIN_TYPE);

/** The `plugins` array of a list's text (the last `plugins` member, as JSON.parse takes it) and its elements. */
function pluginList(text: string): { list: Span; elements: Span[] } {
  const list = objectMembers(text, rootSpan(text)).findLast((m) => m.key === 'plugins')!.value;
  return { list, elements: arrayElements(text, list) };
}

function removeElement(text: string, index: number): string {
  const { elements } = pluginList(text);
  const at = elements[index]!;
  // With its separator: the comma before it, or, for the first of several, the one after it.
  if (index > 0) return text.slice(0, elements[index - 1]!.end) + text.slice(at.end);
  const next = elements[1];
  return text.slice(0, at.start) + text.slice(next === undefined ? at.end : next.start);
}

function appendElement(text: string, entry: Entry): string {
  const { list, elements } = pluginList(text);
  const last = elements.at(-1);
  if (last === undefined) return text.slice(0, list.start + 1) + JSON.stringify(entry) + text.slice(list.start + 1);
  // The separator the list already uses before its last element (its comma and spacing).
  const before = elements.at(-2);
  const separator =
    before === undefined ? `,${text.slice(list.start + 1, last.start)}` : text.slice(before.end, last.start);
  const newline = separator.lastIndexOf('\n');
  let body: string;
  if (newline < 0) body = JSON.stringify(entry);
  else {
    const indent = separator.slice(newline + 1);
    const inner = /\n([ \t]*)\S/.exec(text.slice(last.start, last.end))?.[1];
    const unit =
      inner !== undefined && inner.startsWith(indent) && inner.length > indent.length
        ? inner.slice(indent.length)
        : '  ';
    body = JSON.stringify(entry, null, unit).replaceAll('\n', `\n${indent}`);
  }
  return text.slice(0, last.end) + separator + body + text.slice(last.end);
}

/** Whether the decoded file already chains `entry` (as the first entry of ours). */
export function chainsEntry(file: NetworkConfigFile, entry: Entry): boolean {
  if (file.kind !== 'list') return false;
  const i = ourIndex(file.plugins);
  return i >= 0 && isDeepStrictEqual(file.plugins[i], entry);
}

/**
 * The text of `file` (`text`) with `entry` chained: the same text when it is already there. Throws
 * AGENT_ERR_CNI_CONFIG when the text is not a network config the runtime could load.
 */
export function chainPlugin(text: string, file: string, entry: Entry): string {
  const parsed = parseNetworkConfigFile(text, file);
  if (parsed.kind === 'single') {
    const network = { ...parsed.config };
    delete network['cniVersion'];
    return `${JSON.stringify({ cniVersion: CONVERTED_LIST_VERSION, name: CONVERTED_LIST_NAME, plugins: [network, entry] }, null, 2)}\n`;
  }
  if (chainsEntry(parsed, entry)) return text;
  const i = ourIndex(parsed.plugins);
  return appendElement(i < 0 ? text : removeElement(text, i), entry);
}

/** The text of `file` without our entry: the same text when it has none. Throws as `chainPlugin`. */
export function unchainPlugin(text: string, file: string): string {
  const parsed = parseNetworkConfigFile(text, file);
  if (parsed.kind !== 'list') return text;
  const i = ourIndex(parsed.plugins);
  return i < 0 ? text : removeElement(text, i);
}
