/**
 * The kubeconfig the CNI plugin reads pods and namespaces with, `<run dir>/istio-cni-kubeconfig` (istio
 * cni/pkg/install/kubeconfig.go): the node agent's own cluster and credentials, under Istio's names (cluster
 * `local`, user `istio-cni`, context `istio-cni-context`), with the certificate authority and the service-account
 * token written in, since the plugin runs on the host, where the agent's mounted files may not be.
 *
 * When the agent's token is read from a file (a pod's projected token, or a kubeconfig `tokenFile`), that file's
 * directory is watched and the plugin's kubeconfig rewritten whenever the token changes (Istio's installer
 * watches its service-account directory for the same reason; cni/pkg/install/install.go). The agent does not
 * start before its token file exists, as kubelet starts no container before its projected token is written.
 *
 * Each version is written whole to a temporary file, mode 0600 (Istio's DefaultKubeconfigMode: it holds a
 * token), then renamed, so a plugin running at that moment reads the old file or the new one, never half of one.
 */
import { EventEmitter, once } from 'node:events';
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { userTokenFile } from '../../kube/kube-config.js';
import { writeFileAtomic } from '../../lib/atomic-file.js';
import { MeshError, describeError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';

const KUBECONFIG_MODE = 0o600;
/** Istio's names in the plugin's kubeconfig (kubeconfig.go createKubeConfig). */
const CLUSTER_NAME = 'local';
const USER_NAME = 'istio-cni';
const CONTEXT_NAME = 'istio-cni-context';
/** A token renewal is a burst of events (write the new file, rename it over); read once it has settled. */
const DEBOUNCE_MS = 50;

/** The plugin's kubeconfig for the agent's current cluster and user, with `token` in place of a token file. */
function pluginKubeconfig(kc: KubeConfig, caData: string | undefined, token: string | undefined): string {
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (cluster === null || user === null)
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      "the node agent's kubeconfig has no current context with a cluster and a user",
    );
  const out = new KubeConfig();
  out.loadFromOptions({
    clusters: [{ ...cluster, name: CLUSTER_NAME, ...(caData === undefined ? {} : { caData, caFile: undefined }) }],
    users: [{ ...user, name: USER_NAME, ...(token === undefined ? {} : { token, authProvider: undefined }) }],
    contexts: [{ name: CONTEXT_NAME, cluster: CLUSTER_NAME, user: USER_NAME }],
    currentContext: CONTEXT_NAME,
  });
  return out.exportConfig();
}

const isMissing = (e: unknown): boolean => (e as NodeJS.ErrnoException).code === 'ENOENT';

/** Emits `written` after each version of the file is in place. */
export class PluginKubeconfig extends EventEmitter<{ written: [] }> {
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reading = Promise.resolve();
  private caData: string | undefined;
  private written: string | undefined;
  private readonly closed = new AbortController();

  private constructor(
    private readonly kc: KubeConfig,
    private readonly file: string,
    private readonly tokenFile: string | undefined,
    private readonly log: Logger,
  ) {
    super();
  }

  /** Writes the plugin's kubeconfig (waiting for the agent's token file first) and keeps it current. */
  static async start(kc: KubeConfig, file: string, log: Logger): Promise<PluginKubeconfig> {
    const p = new PluginKubeconfig(kc, file, userTokenFile(kc), log);
    try {
      await p.begin();
    } catch (e) {
      p.close();
      throw e;
    }
    return p;
  }

  close(): void {
    this.closed.abort();
    clearTimeout(this.timer);
    this.watcher?.close();
  }

  private async begin(): Promise<void> {
    const caFile = this.kc.getCurrentCluster()?.caFile;
    if (caFile !== undefined && caFile !== '') {
      try {
        this.caData = (await readFile(caFile)).toString('base64');
      } catch (e) {
        throw new MeshError(
          'AMESH_ERR_CONFIG',
          `cannot read the API's certificate authority ${caFile}: ${describeError(e)}`,
          { cause: e },
        );
      }
    }
    const { tokenFile } = this;
    if (tokenFile === undefined) {
      await this.write(undefined);
      return;
    }
    try {
      this.watcher = watch(path.dirname(tokenFile));
    } catch (e) {
      throw new MeshError(
        'AMESH_ERR_CONFIG',
        `cannot watch the directory of the service-account token ${tokenFile}: ${describeError(e)}`,
        { cause: e },
      );
    }
    this.watcher.on('error', (e) =>
      this.log.error(
        { tokenFile, error: describeError(e) },
        'the service-account token directory can no longer be watched; the plugin keeps the last token',
      ),
    );
    // Watching before the first read: a token written meanwhile is seen. Reads take turns, so two never write at once.
    this.watcher.on('change', () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => void this.inTurn(() => this.refresh()), DEBOUNCE_MS);
    });
    if ((await this.inTurn(() => this.readToken())) === undefined && this.written === undefined) {
      this.log.warn({ tokenFile }, 'waiting for the service-account token file');
      await once(this, 'written', { signal: this.closed.signal });
    }
    // Kept referenced while waiting, so the agent waits rather than exits; from here its servers keep it up.
    this.watcher.unref();
  }

  private inTurn<T>(read: () => Promise<T>): Promise<T> {
    const turn = this.reading.then(read);
    this.reading = turn.then(
      () => undefined,
      () => undefined,
    );
    return turn;
  }

  /** Reads the token file; if it holds a token not written yet, writes it. Undefined when there is no token yet. */
  private async readToken(): Promise<string | undefined> {
    const { tokenFile } = this;
    if (tokenFile === undefined) return undefined;
    let token: string;
    try {
      token = (await readFile(tokenFile, 'utf8')).trim();
    } catch (e) {
      if (isMissing(e)) return undefined;
      throw new MeshError(
        'AMESH_ERR_CONFIG',
        `cannot read the service-account token ${tokenFile}: ${describeError(e)}`,
        { cause: e },
      );
    }
    if (token === '') return undefined;
    if (token !== this.written) await this.write(token);
    return token;
  }

  private async refresh(): Promise<void> {
    try {
      if ((await this.readToken()) !== undefined || this.written === undefined) return;
      this.log.warn(
        { tokenFile: this.tokenFile },
        'the service-account token file is gone or empty; the plugin keeps the last token',
      );
    } catch (e) {
      this.log.error({ error: describeError(e) }, "cannot renew the CNI plugin's token; the plugin keeps the last one");
    }
  }

  private async write(token: string | undefined): Promise<void> {
    const text = pluginKubeconfig(this.kc, this.caData, token);
    try {
      await writeFileAtomic(this.file, text, KUBECONFIG_MODE);
    } catch (e) {
      throw new MeshError(
        'AGENT_ERR_RUN_DIR',
        `cannot write the CNI plugin's kubeconfig ${this.file}: ${describeError(e)}`,
        { cause: e },
      );
    }
    this.written = token;
    this.emit('written');
    if (token !== undefined)
      this.log.info(
        { file: this.file, tokenFile: this.tokenFile },
        "wrote the CNI plugin's kubeconfig with the agent's service-account token",
      );
  }
}
