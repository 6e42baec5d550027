/**
 * `amesh demo --l7`: the tour's L7 step, after the L4 one. examples/l7 goes into the cluster's config directory (a
 * waypoint for backend, echo-v2, an HTTPRoute and AuthorizationPolicies with targetRefs), the backend namespace is
 * labelled `istio.io/use-waypoint=waypoint`, and a RequestAuthentication is written with a key made for the tour.
 * The same unchanged curl in web then shows the waypoint between it and echo: a header routed to v2, DELETE /admin
 * refused, a path that needs a JWT, and the waypoint's request metrics.
 */
import { copyFile, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { stringify } from 'yaml';
import { describeError, MeshError } from '../lib/errors.js';
import { ZTUNNEL_STATS_PORT } from '../lib/istio-ports.js';
import type { Cluster } from '../up/cluster.js';
import type { CommandResult } from '../up/run-command.js';
import { examplesDir } from './examples-dir.js';

const ISSUER = 'tour@amesh.local';
/** How long the waypoint may take to be deployed, become ready and be bound (a pod is started on the way). */
const WAYPOINT_DEADLINE_MS = 120_000;
const NAMESPACES = 'namespaces.yaml';

/** curl in the web pod with extra arguments; prints the body then the status code. */
export type WebCurl = (...args: string[]) => Promise<CommandResult>;

interface Steps {
  readonly say: (s: string) => void;
  readonly until: <T>(step: string, attempt: () => Promise<T | string>, deadlineMs?: number) => Promise<T>;
}

/** Writes a file whole (a temporary name, then renamed), so the directory applier never reads half of it. */
async function writeWhole(file: string, text: string): Promise<void> {
  await writeFile(`${file}.tmp`, text);
  await rename(`${file}.tmp`, file);
}

/** A RequestAuthentication for echo with a key made now, and tokens signed by it: valid, and expired. */
async function jwtRule(): Promise<{ yaml: string; valid: string; expired: string }> {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'tour', alg: 'RS256', use: 'sig' };
  const sign = (exp: number): Promise<string> =>
    new SignJWT({ sub: 'alice' })
      .setProtectedHeader({ alg: 'RS256', kid: 'tour' })
      .setIssuer(ISSUER)
      .setIssuedAt()
      .setExpirationTime(exp)
      .sign(privateKey);
  const now = Math.floor(Date.now() / 1000);
  const yaml = stringify({
    apiVersion: 'security.istio.io/v1',
    kind: 'RequestAuthentication',
    metadata: { name: 'jwt', namespace: 'backend' },
    spec: {
      targetRefs: [{ group: '', kind: 'Service', name: 'echo' }],
      jwtRules: [{ issuer: ISSUER, jwks: JSON.stringify({ keys: [jwk] }) }],
    },
  });
  return { yaml, valid: await sign(now + 3600), expired: await sign(now - 3600) };
}

/** The body and status curl printed (`-w ' %{http_code}'`). */
function answer(r: CommandResult): { body: string; status: string } {
  const out = r.stdout.trimEnd();
  const at = out.lastIndexOf(' ');
  return { body: out.slice(0, at), status: out.slice(at + 1) };
}

export async function l7Tour(cluster: Cluster, config: string, curl: WebCurl, { say, until }: Steps): Promise<void> {
  say(`==> --l7: a waypoint for backend, and HTTP rules for echo.backend (examples/l7, copied into ${config})`);
  for (const f of await readdir(examplesDir('l7')))
    await copyFile(path.join(examplesDir('l7'), f), path.join(config, `l7-${f}`));
  const jwt = await jwtRule();
  await writeWhole(path.join(config, 'l7-jwt.yaml'), jwt.yaml);
  const namespaces = path.join(config, NAMESPACES);
  await writeWhole(
    namespaces,
    (await readFile(namespaces, 'utf8')).replace(
      'name: backend, labels: {istio.io/dataplane-mode: ambient}',
      'name: backend, labels: {istio.io/dataplane-mode: ambient, istio.io/use-waypoint: waypoint}',
    ),
  );
  say(`    labelled backend istio.io/use-waypoint=waypoint in ${namespaces}; istiod deploys the waypoint`);
  const v = (body: string): { hostname: string; peer: string } | undefined => {
    try {
      return JSON.parse(body) as { hostname: string; peer: string };
    } catch {
      return undefined;
    }
  };
  const v2 = await until(
    'the HTTPRoute sends x-version: v2 to echo-v2 through the waypoint',
    async () => {
      const a = answer(await curl('-H', 'x-version: v2', '-w', ' %{http_code}'));
      const e = v(a.body);
      return e?.hostname.startsWith('echo-v2-') === true ? e : `answered ${a.status}: ${a.body.slice(0, 200)}`;
    },
    WAYPOINT_DEADLINE_MS,
  );
  const snapshot = await cluster.snapshot();
  const waypoint = snapshot.pods.find(
    (p) =>
      p.metadata?.namespace === 'backend' &&
      p.metadata.labels?.['gateway.networking.k8s.io/gateway-name'] === 'waypoint',
  );
  const waypointIp = waypoint?.status?.podIP ?? '?';
  say(`    the waypoint runs as backend/${waypoint?.metadata?.name ?? '?'} (${waypointIp})`);
  say(`    curl -H 'x-version: v2' http://echo.backend/: ${v2.hostname} answered, and saw ${v2.peer}: the waypoint`);
  const v1 = answer(await curl('-w', ' %{http_code}'));
  say(`    curl http://echo.backend/: ${v(v1.body)?.hostname ?? v1.body} answered (the route's default)`);
  const show = async (what: string, ...args: string[]): Promise<void> => {
    const a = answer(await curl('-w', ' %{http_code}', ...args));
    const body = v(a.body) === undefined ? a.body : `${v(a.body)!.hostname} answered`;
    say(`    ${what}: ${a.status} ${body}`);
  };
  await show('curl -X DELETE http://echo.backend/admin', '-X', 'DELETE', 'http://echo.backend/admin');
  await show('curl http://echo.backend/admin', 'http://echo.backend/admin');
  await show('curl http://echo.backend/secure (no token)', 'http://echo.backend/secure');
  await show(
    'curl http://echo.backend/secure with an expired token',
    '-H',
    `Authorization: Bearer ${jwt.expired}`,
    'http://echo.backend/secure',
  );
  await show(
    `curl http://echo.backend/secure with a token of ${ISSUER}`,
    '-H',
    `Authorization: Bearer ${jwt.valid}`,
    'http://echo.backend/secure',
  );
  const url = `http://${waypointIp}:${ZTUNNEL_STATS_PORT}/stats/prometheus`;
  const text = await fetch(url).then(
    (r) => r.text(),
    (e: unknown) => {
      throw new MeshError('DEMO_ERR_STEP', `the waypoint's metrics: cannot fetch ${url}: ${describeError(e)}`);
    },
  );
  say(`==> the waypoint's request metrics (${url}; most labels left out):`);
  const label = (l: string, k: string): string => new RegExp(`${k}="([^"]*)"`).exec(l)?.[1] ?? '?';
  for (const l of text
    .split('\n')
    .filter((x) => x.startsWith('istio_requests_total{') && x.includes('reporter="waypoint"')))
    say(
      `    istio_requests_total{reporter="waypoint",source_workload="${label(l, 'source_workload')}",destination_service_name="${label(l, 'destination_service_name')}",response_code="${label(l, 'response_code')}"} ${l.slice(l.lastIndexOf(' ') + 1)}`,
    );
}
