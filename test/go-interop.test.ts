import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEchoServer, type EchoServer } from '../src/echo/echo-server.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { CertificateAuthority } from '../src/lib/pki/certificate-authority.js';
import { createKeyAndCsr } from '../src/lib/pki/csr.js';
import { parseIdentity } from '../src/lib/spiffe.js';
import type { Istiod } from '../src/istiod/istiod.js';
import { IstioCaClient } from '../src/ztunnel/identity/istio-ca-client.js';
import { LocalCaClient } from '../src/ztunnel/identity/local-ca-client.js';
import type { CaClient } from '../src/ztunnel/identity/ca-client.js';
import type { Ztunnel } from '../src/ztunnel/ztunnel.js';
import { buildGoPeer, goSkip, runGo, startGoServer } from './helpers/go.js';
import { startIstiod, startZtunnel } from './helpers/in-process.js';
import { sendAndCollect } from './helpers/mesh-fixture.js';
import { opensslPluginCa } from './helpers/openssl-ca.js';
import { namespaces, pod } from './helpers/manifests.js';

/**
 * Go's crypto/x509 matches a certificate to its issuer by the raw DER of the names (as webpki in ztunnel does), so
 * these tests fail if amesh re-encodes the issuer of what it signs. The CA is made by the openssl CLI with
 * UTF8String names, as Istio's tools/certs do; amesh signs through ztunnel's --local-ca and istiod's
 * CreateCertificate, and Go verifies the chains and speaks HBONE (crypto/tls + net/http HTTP/2 CONNECT).
 */
const skip = goSkip();

const GO_URI = 'spiffe://cluster.local/ns/go/sa/go';
const SERVER_URI = 'spiffe://cluster.local/ns/b/sa/server';

/** One ztunnel node (`n`) with a client and a server workload, and a Go workload on a node of its own. */
function mesh(net: string): string {
  return `
workloads:
- {uid: c, name: client, namespace: a, serviceAccount: client, workloadIps: [${net}.1], protocol: HBONE, node: n}
- {uid: s, name: server, namespace: b, serviceAccount: server, workloadIps: [${net}.2], protocol: HBONE, node: n}
- {uid: go, name: go, namespace: go, serviceAccount: go, workloadIps: [${net}.9], protocol: HBONE, node: go}
`;
}

/** The same pods for istiod, which checks ztunnel's impersonation against the node they run on. */
function manifests(net: string): string {
  const at = (name: string, namespace: string, serviceAccount: string, ip: string, node: string): string =>
    pod({ name, namespace, serviceAccount, ip, node, ambient: false });
  return (
    namespaces('a', 'b', 'go') +
    at('client-0', 'a', 'client', `${net}.1`, 'n') +
    at('server-0', 'b', 'server', `${net}.2`, 'n') +
    at('go-0', 'go', 'go', `${net}.9`, 'go')
  );
}

describe(
  'certificates and HBONE against Go (crypto/x509, crypto/tls, net/http h2), from an openssl UTF8String plug-in CA',
  { skip },
  () => {
    let dir: string;
    let caDir: string;
    let go: string;

    before(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'amesh-go-interop-'));
      caDir = path.join(dir, 'cacerts');
      await opensslPluginCa(caDir);
      go = await buildGoPeer();
    });
    after(async () => {
      await rm(dir, { recursive: true, force: true });
      await rm(path.dirname(go), { recursive: true, force: true });
    });

    /** Writes the chain a CA client returned for `uri` (with its key) and returns the file names. */
    async function issue(
      client: CaClient,
      uri: string,
      name: string,
    ): Promise<{ cert: string; key: string; roots: string }> {
      const { keyPem, csrPem } = await createKeyAndCsr(uri);
      const chain = await client.fetchCertificate(parseIdentity(uri), csrPem, 3600);
      const files = {
        cert: path.join(dir, `${name}.crt`),
        key: path.join(dir, `${name}.key`),
        roots: path.join(dir, `${name}-roots.pem`),
      };
      await writeFile(files.cert, chain.slice(0, -1).join(''));
      await writeFile(files.key, keyPem);
      await writeFile(files.roots, chain.at(-1)!);
      return files;
    }

    async function goVerifies(files: { cert: string; roots: string }, uri: string): Promise<void> {
      const r = await runGo(go, ['verify', files.roots, files.cert]);
      assert.equal(r.status, 0, `Go's crypto/x509 rejected the chain: ${r.stderr}`);
      const out = JSON.parse(r.stdout) as { uris: string[]; path: string[] };
      assert.deepEqual(out.uris, [uri]);
      assert.deepEqual(out.path.slice(1), ['CN=Intermediate CA,O=Istio,L=cluster1', 'CN=Root CA,O=Istio']);
    }

    /** Go client -> ztunnel inbound -> app, and app -> ztunnel outbound -> Go server. */
    async function hboneBothWays(
      net: string,
      zt: Ztunnel,
      goCert: { cert: string; key: string; roots: string },
    ): Promise<void> {
      assert.ok(zt);
      const echo: EchoServer = await startEchoServer(`${net}.2`, 8080);
      try {
        const r = await runGo(go, [
          'client',
          `${net}.2:15008`,
          `${net}.2:8080`,
          'hello from Go',
          goCert.cert,
          goCert.key,
          goCert.roots,
          SERVER_URI,
          `${net}.9`,
        ]);
        assert.equal(r.status, 0, r.stderr);
        assert.deepEqual(JSON.parse(r.stdout) as unknown, { proto: 'HTTP/2.0', status: 200, echoed: 'hello from Go' });
      } finally {
        await echo.close();
      }
      const server = startGoServer(go, [`${net}.9:15008`, goCert.cert, goCert.key, goCert.roots]);
      try {
        await server.ready;
        const s = await socks5Connect(`${net}.1`, 15080, `${net}.9`, 9000, `${net}.1`);
        assert.equal((await sendAndCollect(s, 'bytes to a Go HBONE server')).toString(), 'bytes to a Go HBONE server');
        const req = JSON.parse(
          server
            .output()
            .split('\n')
            .find((l) => l.startsWith('{')) ?? '{}',
        ) as unknown;
        assert.deepEqual(req, {
          method: 'CONNECT',
          authority: `${net}.9:9000`,
          proto: 'HTTP/2.0',
          peer: ['spiffe://cluster.local/ns/a/sa/client'],
        });
      } finally {
        server.proc.kill();
      }
    }

    describe("ztunnel's --local-ca", () => {
      const net = '127.71.1';
      let zt: Ztunnel;
      before(async () => {
        await writeFile(path.join(dir, 'local.yaml'), mesh(net));
        zt = await startZtunnel(path.join(dir, 'local.yaml'), 'n', caDir, { UNSTABLE_ENABLE_SOCKS5: 'true' });
      });
      after(() => (zt as Ztunnel | undefined)?.shutdown());

      test('a workload certificate signed by the --local-ca path verifies in Go: issuer bytes equal the UTF8String CA subject', async () => {
        await goVerifies(
          await issue(new LocalCaClient(await CertificateAuthority.fromPluginDir(caDir)), GO_URI, 'local-go'),
          GO_URI,
        );
      });

      test('HBONE both ways with Go: a Go client through ztunnel inbound to the app, and ztunnel outbound to a Go server', async () => {
        await hboneBothWays(
          net,
          zt,
          await issue(new LocalCaClient(await CertificateAuthority.fromPluginDir(caDir)), GO_URI, 'local-go'),
        );
      });
    });

    describe("istiod's CreateCertificate (istiod --ca-dir)", () => {
      const net = '127.71.2';
      let ist: Istiod;
      let zt: Ztunnel;
      let root: string;
      let istiodLog = '';
      const caClient = async (ns: string, sa: string, node?: string): Promise<IstioCaClient> => {
        const tokenFile = path.join(dir, `token-${ns}-${sa}`);
        await writeFile(
          tokenFile,
          await ist.issuer.issue({ namespace: ns, serviceAccount: sa, audience: 'istio-ca', node }),
        );
        return new IstioCaClient({
          address: `https://${net}.100:${ist.ports.grpc}`,
          rootPem: await readFile(root, 'utf8'),
          tokenFile,
          clusterId: 'Kubernetes',
          impersonate: false,
          altHostname: 'istiod.istio-system.svc',
        });
      };
      before(async () => {
        await writeFile(path.join(dir, 'istiod-mesh.yaml'), mesh(net));
        const configDir = path.join(dir, 'istiod-config');
        await mkdir(configDir);
        await writeFile(path.join(configDir, 'pods.yaml'), manifests(net));
        ist = await startIstiod(configDir, path.join(dir, 'istiod-state'), {
          caDir,
          host: `${net}.100`,
          log: (l) => (istiodLog += l),
        });
        root = ist.rootCertPath;
        const ztToken = path.join(dir, 'token-ztunnel');
        await writeFile(
          ztToken,
          await ist.issuer.issue({
            namespace: 'istio-system',
            serviceAccount: 'ztunnel',
            audience: 'istio-ca',
            node: 'n',
          }),
        );
        zt = await startZtunnel(path.join(dir, 'istiod-mesh.yaml'), 'n', undefined, {
          UNSTABLE_ENABLE_SOCKS5: 'true',
          CA_ADDRESS: `https://${net}.100:${ist.ports.grpc}`,
          CA_ROOT_CA: root,
          ALT_CA_HOSTNAME: 'istiod.istio-system.svc',
          AUTH_TOKEN: ztToken,
        });
      });
      after(async () => {
        // A failed `before` leaves them unset; what did start must still stop, or the test process never exits.
        await (zt as Ztunnel | undefined)?.shutdown();
        await (ist as Istiod | undefined)?.stop();
      });

      test("istiod's serving certificate verifies in Go for istiod.istio-system.svc", async () => {
        const r = await runGo(go, ['tlsdial', `${net}.100:${ist.ports.grpc}`, 'istiod.istio-system.svc', root]);
        assert.equal(r.status, 0, `Go's crypto/tls rejected istiod's serving certificate: ${r.stderr}`);
        assert.deepEqual(JSON.parse(r.stdout) as unknown, { verified: true, alpn: 'h2' });
      });

      test('a certificate from CreateCertificate verifies in Go: issuer bytes equal the UTF8String CA subject', async () => {
        const client = await caClient('go', 'go');
        try {
          await goVerifies(await issue(client, GO_URI, 'istiod-go'), GO_URI);
        } finally {
          client.close();
        }
      });

      test('HBONE both ways with Go, with every certificate from istiod: ztunnel by impersonation, the Go peer for itself', async () => {
        const client = await caClient('go', 'go');
        try {
          await hboneBothWays(net, zt, await issue(client, GO_URI, 'istiod-go'));
          for (const id of ['ns/a/sa/client', 'ns/b/sa/server']) {
            assert.match(
              istiodLog,
              new RegExp(`"identity":"spiffe://cluster.local/${id}","caller":"istio-system/ztunnel"`),
              `istiod issued ${id} to ztunnel`,
            );
          }
        } finally {
          client.close();
        }
      });
    });
  },
);
