/**
 * One unchanged manifest set, as a user would apply it to a kind cluster, under `amesh up --nodes 2 --dataplane
 * ambient`: a hostNetwork DaemonSet with a hostPath and a projected token, a StatefulSet behind its headless Service,
 * a Job and a CronJob, an echo Deployment in an ambient namespace and one in a plain namespace (with a LoadBalancer
 * Service; its echo servers run the amesh image of some registry, by the CLI's path in the image, as `amesh
 * install` renders it), a plain and an ambient client, and a container whose liveness probe starts failing. The checks are what
 * an operator looks at on kind: rollouts, cluster DNS, Services from pods and from the host, capture by ztunnel,
 * the kubelet's restarts and Events, and a teardown that leaves nothing behind.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  amesh,
  assertTornDown,
  hostState,
  kubectlIn,
  launchUp,
  removeCluster,
  upSkip,
  type HostState,
  type LaunchedUp,
  type RunResult,
} from './helpers/amesh-up.js';
import { ambientNamespace, namespaces, object } from './helpers/manifests.js';
import { waitFor } from './helpers/mesh-fixture.js';
import { TestNetns } from './helpers/netns.js';
import { runToExit } from './helpers/run-to-exit.js';

/** Long enough for pods of the set to be scheduled, started and probed while other test files load the machine. */
const DEADLINE_MS = 90_000;
const ECHO_PORT = 8080;
const FQDN = (svc: string, ns: string): string => `${svc}.${ns}.svc.cluster.local`;

/** An HTTPS GET of https://argv[1]/version that prints `HTTP <status>` (any status is the API server's answer). */
const HTTPS_STATUS =
  "require('https').get({ host: process.argv[1], path: '/version', rejectUnauthorized: false, timeout: 5000 }, (r) => { process.stdout.write('HTTP ' + r.statusCode); r.resume(); }).on('error', (e) => process.stdout.write('ERR ' + e.code)).on('timeout', function () { process.stdout.write('ERR TIMEOUT'); this.destroy(); });";

interface PodJson {
  metadata: { name: string; uid: string; creationTimestamp: string };
  spec: { nodeName?: string };
  status: {
    phase: string;
    podIP?: string;
    conditions?: { type: string; status: string; lastTransitionTime: string }[];
    containerStatuses?: {
      restartCount: number;
      state: { running?: object };
      lastState?: { terminated?: { exitCode: number; reason: string } };
    }[];
  };
}

/** A container that idles; `marker` names its process in `ps` (the teardown check looks for it). */
const idle = (marker: string): string[] => ['node', '-e', `/* ${marker} */ setInterval(() => undefined, 1e6)`];

/** The same, after `sh` ran `first`. */
const shThenIdle = (marker: string, first: string): string[] => [
  'sh',
  '-c',
  `${first}; exec ${idle(marker)
    .map((a) => `'${a}'`)
    .join(' ')}`,
];

/** The amesh image from some registry, run by its CLI's path in the image: the kubelet maps it to the local build. */
const echoContainer = {
  name: 'echo',
  image: 'registry.example/mesh/amesh:1.0.0',
  command: ['/usr/local/bin/amesh', 'echo', 'server', '--address', `0.0.0.0:${String(ECHO_PORT)}`],
  ports: [{ name: 'http', containerPort: ECHO_PORT }],
  readinessProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 1 },
};

/** An apps/v1 workload of echo servers labelled `app: <name>`; `spec` holds the kind's own fields. */
const echoWorkload = (kind: 'Deployment' | 'StatefulSet', name: string, namespace: string, spec: object): string =>
  object({
    apiVersion: 'apps/v1',
    kind,
    metadata: { name, namespace },
    spec: {
      ...spec,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { terminationGracePeriodSeconds: 1, containers: [echoContainer] },
      },
    },
  });

const echoDeployment = (namespace: string): string =>
  echoWorkload('Deployment', 'echo', namespace, { replicas: 1 }) +
  service(namespace, 'echo', { selector: { app: 'echo' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] });

function service(namespace: string, name: string, spec: object): string {
  return object({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace }, spec });
}

const plainPod = (namespace: string, name: string, spec: object): string =>
  object({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: { terminationGracePeriodSeconds: 1, ...spec },
  });

function manifestSet(marker: string, hostDir: string): string {
  const quick = (name: string): object => ({ name, image: 'amesh', command: ['sh', '-c', 'exit 0'] });
  return (
    namespaces('infra', 'legacy') +
    ambientNamespace('backend') +
    ambientNamespace('frontend') +
    object({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'node-agent', namespace: 'infra' },
      spec: {
        selector: { matchLabels: { app: 'node-agent' } },
        template: {
          metadata: { labels: { app: 'node-agent' } },
          spec: {
            hostNetwork: true,
            dnsPolicy: 'ClusterFirstWithHostNet',
            terminationGracePeriodSeconds: 1,
            tolerations: [{ operator: 'Exists' }],
            volumes: [
              { name: 'host', hostPath: { path: hostDir, type: 'DirectoryOrCreate' } },
              {
                name: 'token',
                projected: {
                  sources: [{ serviceAccountToken: { audience: 'infra', expirationSeconds: 600, path: 'token' } }],
                },
              },
            ],
            containers: [
              {
                name: 'agent',
                image: 'amesh',
                command: shThenIdle(marker, 'echo "$NODE_NAME" > "/host/$NODE_NAME"'),
                env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
                volumeMounts: [
                  { name: 'host', mountPath: '/host' },
                  { name: 'token', mountPath: '/var/run/secrets/infra' },
                ],
              },
            ],
          },
        },
      },
    }) +
    service('legacy', 'web', {
      clusterIP: 'None',
      selector: { app: 'web' },
      ports: [{ name: 'http', port: ECHO_PORT }],
    }) +
    echoWorkload('StatefulSet', 'web', 'legacy', { serviceName: 'web', replicas: 2 }) +
    object({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'once', namespace: 'legacy' },
      spec: {
        completions: 2,
        parallelism: 2,
        backoffLimit: 0,
        template: { spec: { restartPolicy: 'Never', containers: [quick('work')] } },
      },
    }) +
    object({
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'tick', namespace: 'legacy' },
      spec: {
        schedule: '*/1 * * * *',
        jobTemplate: { spec: { template: { spec: { restartPolicy: 'Never', containers: [quick('tick')] } } } },
      },
    }) +
    echoDeployment('backend') +
    echoDeployment('legacy') +
    service('legacy', 'echo-lb', {
      type: 'LoadBalancer',
      selector: { app: 'echo' },
      ports: [{ name: 'http', port: 80, targetPort: 'http' }],
    }) +
    plainPod('legacy', 'client', { containers: [{ name: 'client', image: 'amesh', command: idle(marker) }] }) +
    plainPod('frontend', 'client', { containers: [{ name: 'client', image: 'amesh', command: idle(marker) }] }) +
    // Healthy while /state/healthy exists; every start of the container makes it (the emptyDir outlives restarts).
    plainPod('legacy', 'liveness', {
      volumes: [{ name: 'state', emptyDir: {} }],
      containers: [
        {
          name: 'app',
          image: 'amesh',
          command: shThenIdle(marker, 'touch /state/healthy'),
          volumeMounts: [{ name: 'state', mountPath: '/state' }],
          livenessProbe: { exec: { command: ['test', '-f', '/state/healthy'] }, periodSeconds: 1, failureThreshold: 2 },
        },
      ],
    })
  );
}

describe(
  'amesh up --nodes 2 --dataplane ambient runs an unchanged manifest set as a kind cluster would',
  { skip: upSkip },
  () => {
    const id = randomBytes(3).toString('hex');
    const cluster = `m${id}`;
    const marker = `amesh-up-manifests-${id}`;
    let host: TestNetns;
    let dir: string;
    let dataDir: string;
    let hostDir: string;
    let clean: HostState;
    let launched: LaunchedUp | undefined;
    const kubectl = (...args: string[]): Promise<RunResult> => kubectlIn(host, dataDir, ...args);
    const ok = async (...args: string[]): Promise<string> => {
      const r = await kubectl(...args);
      assert.equal(r.status, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    const getPod = async (ns: string, name: string): Promise<PodJson> =>
      JSON.parse(await ok('get', 'pod', '-n', ns, name, '-o', 'json')) as PodJson;
    const podsOf = async (ns: string, selector: string): Promise<PodJson[]> =>
      (JSON.parse(await ok('get', 'pods', '-n', ns, '-l', selector, '-o', 'json')) as { items: PodJson[] }).items;
    const clusterIp = (ns: string, svc: string): Promise<string> =>
      ok('get', 'service', '-n', ns, svc, '-o', 'jsonpath={.spec.clusterIP}');
    /** `amesh exec` in a pod's container; its status is the command's. */
    const execIn = (pod: string, ...cmd: string[]): Promise<RunResult> =>
      amesh(host, 'exec', '--data-dir', dataDir, pod, '--', ...cmd);
    /** Runs `cmd` in `pod` until it exits 0 with output matching `expected`, and returns that output. */
    const untilOutput = async (what: string, pod: string, expected: RegExp, ...cmd: string[]): Promise<string> => {
      let last: RunResult | undefined;
      await waitFor(
        what,
        async () => {
          last = await execIn(pod, ...cmd);
          return last.status === 0 && expected.test(last.stdout);
        },
        DEADLINE_MS,
      ).catch(() => assert.fail(`${what}: ${JSON.stringify(last)}\n${launched?.stderr().slice(-2000) ?? ''}`));
      return last!.stdout;
    };
    /** curl of http://`target`/ from `pod` until the echo answers; its JSON body. */
    const curlEcho = (pod: string, target: string): Promise<string> =>
      untilOutput(
        `echo at ${target} from ${pod}`,
        pod,
        /"hostname":"echo-/,
        'curl',
        '-sS',
        '-m',
        '5',
        `http://${target}/`,
      );
    const rolledOut = async (ns: string, what: string): Promise<void> => {
      await ok('rollout', 'status', '-n', ns, what, `--timeout=${String(DEADLINE_MS / 1000)}s`);
    };

    before(async () => {
      host = await TestNetns.create();
      dir = await mkdtemp(path.join(tmpdir(), 'amesh-up-manifests-'));
      dataDir = path.join(dir, 'data');
      hostDir = path.join(dir, 'infra-host');
      const manifests = path.join(dir, 'manifests');
      await mkdir(manifests);
      await writeFile(path.join(manifests, 'set.yaml'), manifestSet(marker, hostDir));
      clean = await hostState(host, cluster, marker);
      const dirs = ['--config-dir', manifests, '--data-dir', dataDir];
      launched = launchUp(host, [...dirs, '--name', cluster, '--nodes', '2', '--dataplane', 'ambient']);
      await launched.ready;
    });

    after(async () => {
      await removeCluster(launched, host, dataDir);
      await host.remove();
      await rm(dir, { recursive: true, force: true });
    });

    test('the hostNetwork DaemonSet runs a pod on each node, which writes its node name into its hostPath on the host and holds a projected token bound to it for audience infra', async () => {
      await rolledOut('infra', 'daemonset/node-agent');
      const pods = await podsOf('infra', 'app=node-agent');
      assert.deepEqual(pods.map((p) => p.spec.nodeName).sort(), ['node1', 'node2']);
      for (const p of pods) {
        const node = p.spec.nodeName!;
        await waitFor(
          `${node}'s file on the host`,
          async () => {
            const text = await readFile(path.join(hostDir, node), 'utf8').catch(() => '');
            return text === `${node}\n`;
          },
          DEADLINE_MS,
        );
        const jwt = await untilOutput(
          'the token',
          `infra/${p.metadata.name}`,
          /^[\w-]+\.[\w-]+\.[\w-]+$/,
          'cat',
          '/var/run/secrets/infra/token',
        );
        const claims = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as {
          aud: string[];
          exp: number;
          iat: number;
          'kubernetes.io': { namespace: string; pod: { name: string; uid: string } };
        };
        assert.deepEqual(claims.aud, ['infra']);
        assert.equal(claims.exp - claims.iat, 600);
        assert.equal(claims['kubernetes.io'].namespace, 'infra');
        assert.deepEqual(claims['kubernetes.io'].pod, { name: p.metadata.name, uid: p.metadata.uid });
      }
    });

    test('the StatefulSet makes web-0, then web-1 once web-0 is Ready; web-0.web.legacy.svc.cluster.local resolves to web-0 from a plain pod', async () => {
      await rolledOut('legacy', 'statefulset/web');
      const web0 = await getPod('legacy', 'web-0');
      const web1 = await getPod('legacy', 'web-1');
      const ready0 = web0.status.conditions?.find((c) => c.type === 'Ready' && c.status === 'True');
      assert.ok(ready0, JSON.stringify(web0.status));
      assert.ok(
        Date.parse(web1.metadata.creationTimestamp) >= Date.parse(ready0.lastTransitionTime),
        `web-1 created ${web1.metadata.creationTimestamp}, web-0 Ready ${ready0.lastTransitionTime}`,
      );
      const answer = await untilOutput(
        'web-0 resolved',
        'legacy/client',
        new RegExp(`^${web0.status.podIP!.replaceAll('.', '\\.')}\\s`),
        'getent',
        'hosts',
        `web-0.${FQDN('web', 'legacy')}`,
      );
      assert.match(answer, /web-0\.web\.legacy\.svc\.cluster\.local/);
    });

    test('the Job runs its 2 completions to Complete; the API keeps the CronJob and kubectl shows its schedule', async () => {
      await ok(
        'wait',
        '-n',
        'legacy',
        '--for=condition=Complete',
        'job/once',
        `--timeout=${String(DEADLINE_MS / 1000)}s`,
      );
      assert.equal(await ok('get', 'job', '-n', 'legacy', 'once', '-o', 'jsonpath={.status.succeeded}'), '2');
      assert.match(await ok('get', 'cronjob', '-n', 'legacy', 'tick'), /^tick\s+\*\/1 \* \* \* \*\s/m);
    });

    test('a plain client reaches the plain echo by ClusterIP and by name, and cluster DNS (kube-dns at 10.96.0.10) answers the ambient echo Service with its ClusterIP', async () => {
      await rolledOut('legacy', 'deployment/echo');
      assert.match((await execIn('legacy/client', 'cat', '/etc/resolv.conf')).stdout, /^nameserver 10\.96\.0\.10$/m);
      const vip = await clusterIp('legacy', 'echo');
      for (const target of [vip, 'echo', FQDN('echo', 'legacy')]) {
        const body = await curlEcho('legacy/client', target);
        assert.match(body, /"hostname":"echo-[\w-]+"/);
      }
      const backendVip = await clusterIp('backend', 'echo');
      const hosts = await untilOutput(
        'the backend name',
        'legacy/client',
        /./,
        'getent',
        'hosts',
        FQDN('echo', 'backend'),
      );
      assert.equal(hosts.split(/\s+/)[0], backendVip);
    });

    test('an ambient client, captured by the node agent, reaches the API server as kubernetes.default.svc and the ambient echo by name through ztunnel', async () => {
      await rolledOut('backend', 'deployment/echo');
      await waitFor(
        'the client enrolled',
        async () =>
          (await ok(
            'get',
            'pod',
            '-n',
            'frontend',
            'client',
            '-o',
            'jsonpath={.metadata.annotations.ambient\\.istio\\.io/redirection}',
          )) === 'enabled',
        DEADLINE_MS,
      );
      await untilOutput(
        'the API server',
        'frontend/client',
        /^HTTP \d{3}$/,
        'node',
        '-e',
        HTTPS_STATUS,
        'kubernetes.default.svc',
      );
      const echoIdentity = 'destination_principal="spiffe://cluster.local/ns/backend/sa/default"';
      const opened = async (): Promise<number> => {
        let total = 0;
        const ztunnels = (
          await kubectl(
            'get',
            'pods',
            '-n',
            'istio-system',
            '-l',
            'app=ztunnel',
            '-o',
            'jsonpath={.items[*].metadata.name}',
          )
        ).stdout.split(' ');
        assert.equal(ztunnels.length, 2, 'one ztunnel per node');
        for (const pod of ztunnels) {
          const exec = ['exec', '--data-dir', dataDir, `istio-system/${pod}`, '--'];
          const r = await amesh(host, ...exec, 'curl', '-sS', 'http://127.0.0.1:15020/metrics');
          for (const line of r.stdout.split('\n'))
            if (line.startsWith('istio_tcp_connections_opened_total{') && line.includes(echoIdentity))
              total += Number(line.split(' ').at(-1));
        }
        return total;
      };
      const before_ = await opened();
      for (const target of ['echo.backend', FQDN('echo', 'backend')]) await curlEcho('frontend/client', target);
      await waitFor(
        'the connections counted by ztunnel with the echo identity',
        async () => (await opened()) >= before_ + 2,
        DEADLINE_MS,
      );
    });

    test("the host reaches the LoadBalancer Service's ingress address with curl, as it reaches a kind cluster's", async () => {
      let address = '';
      await waitFor(
        'an ingress address',
        async () =>
          (address = await ok(
            'get',
            'service',
            '-n',
            'legacy',
            'echo-lb',
            '-o',
            'jsonpath={.status.loadBalancer.ingress[0].ip}',
          )) !== '',
        DEADLINE_MS,
      );
      await rolledOut('legacy', 'deployment/echo');
      const r = await runToExit(
        'ip',
        ['netns', 'exec', host.name, 'curl', '-sS', '-m', '5', `http://${address}/`],
        10_000,
      );
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /"hostname":"echo-/);
    });

    test('a container whose liveness probe starts failing is restarted by the kubelet: restartCount 1, lastState terminated, an Unhealthy Event', async () => {
      await waitFor(
        'liveness running',
        async () => (await getPod('legacy', 'liveness')).status.containerStatuses?.[0]?.state.running !== undefined,
        DEADLINE_MS,
      );
      const rm_ = await execIn('legacy/liveness', 'rm', '/state/healthy');
      assert.equal(rm_.status, 0, rm_.stderr);
      await waitFor(
        'liveness restarted',
        async () => {
          const s = (await getPod('legacy', 'liveness')).status.containerStatuses?.[0];
          return s?.restartCount === 1 && s.state.running !== undefined;
        },
        DEADLINE_MS,
      );
      const s = (await getPod('legacy', 'liveness')).status.containerStatuses![0]!;
      assert.ok(s.lastState?.terminated, JSON.stringify(s));
      const events = await ok(
        'get',
        'events',
        '-n',
        'legacy',
        '--field-selector',
        'involvedObject.name=liveness,reason=Unhealthy',
        '-o',
        'jsonpath={range .items[*]}{.type} {.message}{"\\n"}{end}',
      );
      assert.match(events, /^Warning Liveness probe failed: /m);
    });

    test('SIGTERM tears the cluster down: no namespace, link, route, iptables rule, ipset, process or data left', async () => {
      await assertTornDown(launched!, host, cluster, marker, clean, dataDir);
    });
  },
);
