/**
 * The README's main job, `amesh demo`, as a user runs it: the ambient tour over `amesh up` (root; inside a
 * throwaway network namespace standing in for the host), and the SOCKS5 tour that needs no root.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { ameshCommand } from '../src/up/amesh-command.js';
import { hostState, upSkip } from './helpers/amesh-up.js';
import { kubectlSkip } from './helpers/kubectl.js';
import { localMeshPodIp } from './helpers/local-mesh-example.js';
import { netnsSkip, TestNetns } from './helpers/netns.js';
import { runToExit } from './helpers/run-to-exit.js';

/** The tour takes about 40 s on an idle machine: starting the cluster, four requests, a policy change, the L7 step, teardown. */
const DEMO_DEADLINE_MS = 180_000;

test(
  "the README's main job (`amesh demo --keep --l7`): an unchanged curl in frontend/web on node1 reaches echo.backend's pods on node2 over mTLS with both identities verified, a policy edit denies it, the metrics show both whole; with --l7 a waypoint routes by header, refuses DELETE /admin and needs a JWT on /secure; the kept cluster has its allow policy back and the command it suggests works as printed; Ctrl-C with the output pipe gone leaves nothing",
  { skip: upSkip },
  async () => {
    const id = randomBytes(3).toString('hex');
    const cluster = `demo${id}`;
    const host = await TestNetns.create();
    const dir = await mkdtemp(path.join(tmpdir(), 'amesh-demo-test-'));
    // What the tour starts names its data dir (the kubelets), or runs in the cluster's cgroup (the pods): it must
    // leave none behind. The echo pods' own command lines are the same in every cluster.
    const marker = dir;
    let running: ReturnType<typeof spawn> | undefined;
    try {
      const clean = await hostState(host, cluster, marker);
      const { cmd, args } = ameshCommand();
      const demo = spawn(
        'nsenter',
        [
          `--net=${host.path}`,
          '--',
          cmd,
          ...args,
          'demo',
          '--keep',
          '--l7',
          '--data-dir',
          path.join(dir, 'data'),
          '--name',
          cluster,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      running = demo;
      let out = '';
      const kept = new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the tour did not reach --keep:\n${out}`)), DEMO_DEADLINE_MS);
        const read = (d: Buffer): void => {
          out += d.toString();
          const line = /==> the cluster keeps running: .*\n/.exec(out)?.[0];
          if (line === undefined) return;
          clearTimeout(timer);
          resolve(line);
        };
        demo.stdout.on('data', read);
        demo.stderr.on('data', read);
        demo.once('exit', (code) => reject(new Error(`amesh demo exited with ${String(code)}:\n${out}`)));
      });
      const keptLine = await kept;
      const webIp = /frontend\/web \((\d+\.\d+\.\d+\.\d+), node1\)/.exec(out)?.[1];
      assert.ok(webIp !== undefined, out);
      assert.match(out, /frontend +web +1\/1 +Running +0 +\S+ +node1/);
      assert.match(out, /backend +echo-[a-z0-9]+-[a-z0-9]+ +1\/1 +Running +0 +\S+ +node2/);
      assert.match(
        out,
        new RegExp(`echo-[a-z0-9]+-[a-z0-9]+ answered; it saw the client at ${webIp.replaceAll('.', '\\.')}:\\d+`),
        "the echo pod saw the client pod's own address",
      );
      assert.match(out, /source_principal=spiffe:\/\/cluster\.local\/ns\/frontend\/sa\/web\n/);
      assert.match(
        out,
        /destination_principal=spiffe:\/\/cluster\.local\/ns\/backend\/sa\/echo \(connection_security_policy=mutual_tls\)/,
      );
      assert.match(out, /the same curl now fails \(exit \d+\)/);
      assert.match(out, /error=ZT_ERR_POLICY_DENIED: /);
      assert.match(
        out,
        /istio_tcp_connections_failed_total\{reporter="destination"[^\n]*source_principal="spiffe:\/\/cluster\.local\/ns\/frontend\/sa\/web"[^\n]*destination_service="echo\.backend\.svc\.cluster\.local"[^\n]*response_flags="DENY"[^\n]*\} \d+\n/,
        'the metric line is whole, its value included',
      );
      assert.match(
        out,
        /restoring \S+policies\.yaml: backend's ALLOW policy names web again\n {4}the same curl succeeds again\n/,
      );
      // --l7: the waypoint between web and echo.
      const waypointIp = /the waypoint runs as backend\/waypoint-[a-z0-9-]+ \((\d+\.\d+\.\d+\.\d+)\)/.exec(out)?.[1];
      assert.ok(waypointIp !== undefined, out);
      assert.match(
        out,
        new RegExp(
          `x-version: v2' http://echo.backend/: echo-v2-[a-z0-9-]+ answered, and saw ${waypointIp.replaceAll('.', '\\.')}:\\d+`,
        ),
      );
      assert.match(out, /curl http:\/\/echo\.backend\/: echo-[a-z0-9]+-[a-z0-9]+ answered \(the route's default\)/);
      assert.match(out, /curl -X DELETE http:\/\/echo\.backend\/admin: 403 RBAC: access denied\n/);
      assert.match(out, /curl http:\/\/echo\.backend\/admin: 200 echo-/);
      assert.match(out, /secure \(no token\): 403 RBAC: access denied\n/);
      assert.match(out, /secure with an expired token: 401 Jwt is expired\n/);
      assert.match(out, /secure with a token of tour@amesh\.local: 200 echo-/);
      assert.match(
        out,
        /istio_requests_total\{reporter="waypoint",source_workload="web",destination_service_name="echo",response_code="403"\} [2-9]\n/,
      );

      const exec = /; ((?:amesh|npm [^;]*) exec --data-dir [^;]*); edit /.exec(keptLine)?.[1];
      assert.ok(exec !== undefined, keptLine);
      const r = await runToExit('nsenter', [`--net=${host.path}`, '--', 'sh', '-c', exec], 60_000);
      assert.equal(r.status, 0, `${exec}: ${r.stderr}`);
      assert.match(r.stdout, /"peer":/, 'the suggested command works as printed, and web is allowed again');

      demo.stdout.destroy();
      demo.stderr.destroy();
      demo.kill('SIGINT');
      const [code] = (await once(demo, 'exit')) as [number | null];
      assert.equal(code, 0);
      assert.deepEqual(await hostState(host, cluster, marker), clean);
    } finally {
      // A failed assertion leaves the kept cluster running: Ctrl-C it, and wait for its teardown, before removing.
      if (running !== undefined && running.exitCode === null && running.signalCode === null) {
        const exited = once(running, 'exit');
        running.kill('SIGINT');
        await exited;
      }
      await host.remove();
      await rm(dir, { recursive: true, force: true });
    }
  },
);

test('`amesh demo --socks5` (no root) runs istiod and two ztunnels, shows mTLS and a live policy deny, and stops cleanly', async () => {
  // The tour binds Istio's fixed ports on its nodes' and pods' loopback addresses: as root, in a throwaway network
  // namespace, so that neither the suite's other files nor a mesh running on this machine meet it.
  const ns = netnsSkip() === false ? await TestNetns.create() : undefined;
  try {
    const { cmd, args } = ameshCommand();
    const demo = [cmd, ...args, 'demo', '--socks5'];
    const [bin = cmd, ...argv] = ns === undefined ? demo : ['nsenter', `--net=${ns.path}`, '--', ...demo];
    const p = spawn(bin, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((r) => p.once('exit', r));
    assert.equal(code, 0, out);
    assert.match(
      out,
      /authenticated the client as spiffe:\/\/cluster\.local\/ns\/frontend\/sa\/web \(connection_security_policy=mutual_tls\)/,
    );
    assert.match(out, /is now refused: .*not allowed by ruleset/);
    assert.match(out, /ztunnels exited with 0, 0/);
    if (kubectlSkip === false) {
      const ip = localMeshPodIp('backend', 'echo-0').replaceAll('.', '\\.');
      assert.match(
        out,
        new RegExp(`backend +echo-0 +1/1 +Running +0 +\\S+ +${ip} +node2`),
        'kubectl lists the demo pods from the embedded API',
      );
    }
  } finally {
    await ns?.remove();
  }
});
