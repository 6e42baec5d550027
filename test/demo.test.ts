import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { ameshCommand } from '../src/demo/ztunnel-process.js';
import { kubectlSkip } from './helpers/kubectl.js';

test("the README's main job (`amesh demo`) runs istiod and two ztunnels, shows mTLS and a live policy deny, and stops cleanly", async () => {
  const { cmd, args } = ameshCommand();
  const p = spawn(cmd, [...args, 'demo'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => p.once('exit', r));
  assert.equal(code, 0, out);
  assert.match(out, /authenticated the client as spiffe:\/\/cluster\.local\/ns\/frontend\/sa\/web \(connection_security_policy=mutual_tls\)/);
  assert.match(out, /is now refused: .*not allowed by ruleset/);
  assert.match(out, /ztunnels exited with 0, 0/);
  if (kubectlSkip === false) assert.match(out, /backend +echo-0 +1\/1 +Running +0 +\S+ +127\.0\.10\.2 +node2/, 'kubectl lists the demo pods from the embedded API');
});
