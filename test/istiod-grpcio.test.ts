import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import { LogControl } from '../src/lib/log.js';
import { createKeyAndCsr } from '../src/lib/pki/csr.js';
import { loadIstiodConfig } from '../src/istiod/config.js';
import { Istiod } from '../src/istiod/istiod.js';

const PYTHON = '/usr/bin/python3';
const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'interop', 'ca_grpcio.py');
const probe = spawnSync(PYTHON, ['-c', 'import grpc'], { encoding: 'utf8' });
const skip = probe.status === 0 ? false : `Debian's python3-grpcio is not installed (apt-get install python3-grpcio; .ci/run does this): ${probe.stderr || probe.error?.message || ''}`.trim();

interface Reply {
  code: string;
  details: string;
  chain: string[];
}

describe('istiod CA from python3-grpcio with hand-encoded protobuf (spec §2.3 field numbers on the wire)', { skip }, () => {
  let dir: string;
  let ist: Istiod;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-grpcio-'));
    await writeFile(path.join(dir, 'pods.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: {name: echo-0, namespace: backend}\nspec: {serviceAccountName: echo, nodeName: node1}\n');
    const cfg = loadIstiodConfig({ configDir: dir, stateDir: path.join(dir, 'state'), grpcAddress: '127.0.0.1:0', monitoringAddress: '127.0.0.1:0' }, {});
    ist = await Istiod.start(cfg, new LogControl({ format: 'json', level: 'silent', component: 'istiod', out: new Writable({ write: (_c, _e, cb) => cb() }) }));
  });
  after(async () => {
    await ist.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function call(token: string, csrUri: string, impersonate?: string): Promise<Reply> {
    const csr = path.join(dir, `csr-${Math.random()}.pem`);
    await writeFile(csr, (await createKeyAndCsr(csrUri)).csrPem);
    const p = spawn(PYTHON, [SCRIPT, `127.0.0.1:${ist.ports.grpc}`, ist.rootCertPath, token, csr, ...(impersonate === undefined ? [] : [impersonate])], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const [code] = (await once(p, 'exit')) as [number];
    assert.equal(code, 0, err);
    return JSON.parse(out) as Reply;
  }

  test('csr (1), validity_duration (3) and cert_chain (1) round-trip; the chain ends with the root bundle', async () => {
    const r = await call(await ist.issuer.issue({ namespace: 'frontend', serviceAccount: 'web', audience: 'istio-ca' }), 'spiffe://cluster.local/ns/frontend/sa/web');
    assert.equal(r.code, 'OK', r.details);
    assert.equal(r.chain.length, 3);
    const leaf = new X509Certificate(r.chain[0]!);
    assert.equal(leaf.subjectAltName, 'URI:spiffe://cluster.local/ns/frontend/sa/web');
    const lifetime = (Date.parse(leaf.validTo) - Date.parse(leaf.validFrom)) / 1000;
    assert.ok(lifetime > 3500 && lifetime < 3700, `validity_duration honoured (${lifetime}s)`);
  });

  test('metadata (4) Struct carries ImpersonatedIdentity; gRPC status codes reach a foreign client', async () => {
    const zt = await ist.issuer.issue({ namespace: 'istio-system', serviceAccount: 'ztunnel', node: 'node1', audience: 'istio-ca' });
    const ok = await call(zt, 'spiffe://cluster.local/ns/backend/sa/echo', 'spiffe://cluster.local/ns/backend/sa/echo');
    assert.equal(ok.code, 'OK', ok.details);
    assert.equal(new X509Certificate(ok.chain[0]!).subjectAltName, 'URI:spiffe://cluster.local/ns/backend/sa/echo');
    const unauth = await call(zt, 'spiffe://cluster.local/ns/other/sa/x', 'spiffe://cluster.local/ns/other/sa/x');
    assert.equal(unauth.code, 'UNAUTHENTICATED');
    assert.match(unauth.details, /impersonation/);
    const badCsr = await call(zt, 'spiffe://cluster.local/ns/backend/sa/wrong', 'spiffe://cluster.local/ns/backend/sa/echo');
    assert.equal(badCsr.code, 'INVALID_ARGUMENT');
  });
});
