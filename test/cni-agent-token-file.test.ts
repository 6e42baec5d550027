/**
 * `amesh cni-agent` started before its service-account token file exists (amesh up's kubelet starts the agent's
 * process as soon as its pod is created; the pod-bound token can only be requested after that): the process waits
 * for the file instead of exiting, then writes the plugin's kubeconfig with that token.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { ameshCommand } from '../src/up/amesh-command.js';
import { tokenFileKubeconfig } from './helpers/token-file-kubeconfig.js';

/** Loopback addresses of this file (nothing listens on the API address: the agent never gets that far). */
const API = 'https://127.103.0.1:1';
const READINESS = '127.103.0.2:0';
const MONITORING = '127.103.0.3:0';
const LINE_DEADLINE_MS = 30_000;

test("an agent started before its token file exists waits for it (the process stays up), then writes the plugin's kubeconfig with that token", async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-agent-token-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const tokenFile = path.join(dir, 'sa', 'token');
  await mkdir(path.dirname(tokenFile));
  const kubeconfig = path.join(dir, 'kubeconfig');
  await writeFile(
    kubeconfig,
    tokenFileKubeconfig({ name: 'amesh', server: API, skipTLSVerify: true }, 'istio-cni', tokenFile),
  );
  const runDir = path.join(dir, 'run');
  const { cmd, args } = ameshCommand();
  const agent = spawn(
    cmd,
    [
      ...args,
      'cni-agent',
      '--kubeconfig',
      kubeconfig,
      '--cni-agent-run-dir',
      runDir,
      '--ztunnel-uds-address',
      path.join(dir, 'ztunnel.sock'),
      '--readiness-address',
      READINESS,
      '--monitoring-address',
      MONITORING,
    ],
    {
      env: { ...process.env, NODE_NAME: 'node-a', LOG_FORMAT: 'json', CNI_ENABLE_INSTALL: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let exited: string | undefined;
  agent.once('exit', (code, signal) => (exited = `${String(code)} ${String(signal)}`));
  t.after(() => {
    if (exited === undefined) agent.kill('SIGKILL');
  });
  const lines = createInterface({ input: agent.stdout });
  const seen: string[] = [];
  const logLine = (message: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `no "${message}" within ${String(LINE_DEADLINE_MS)} ms (exited: ${String(exited)}):\n${seen.join('\n')}`,
            ),
          ),
        LINE_DEADLINE_MS,
      );
      const onLine = (l: string): void => {
        seen.push(l);
        if ((JSON.parse(l) as { message?: string }).message !== message) return;
        clearTimeout(timer);
        lines.off('line', onLine);
        resolve();
      };
      lines.on('line', onLine);
      agent.once('exit', () =>
        reject(new Error(`the agent exited (${String(exited)}) before "${message}":\n${seen.join('\n')}`)),
      );
    });

  await logLine('waiting for the service-account token file');
  await writeFile(`${tokenFile}.tmp`, 'late-token');
  const written = logLine("wrote the CNI plugin's kubeconfig with the agent's service-account token");
  await rename(`${tokenFile}.tmp`, tokenFile);
  await written;
  assert.equal(exited, undefined);
  const plugin = JSON.parse(await readFile(path.join(runDir, 'istio-cni-kubeconfig'), 'utf8')) as {
    users: { name: string; user: { token?: string } }[];
  };
  assert.deepEqual(
    plugin.users.map((u) => [u.name, u.user.token]),
    [['istio-cni', 'late-token']],
  );
});
