import { Command, Option } from '@commander-js/extra-typings';
import { parseHostPort } from '../lib/ip.js';
import { MeshError } from '../lib/errors.js';
import { SOCKS5_PORT } from '../lib/istio-ports.js';
import { startEchoServer } from '../echo/echo-server.js';
import { runEchoClient } from '../echo/echo-client.js';
import { fatal } from './fatal.js';

export function echoCommand(): Command {
  const echo = new Command('echo').description('test application: a TCP/HTTP echo server and a client');
  echo
    .command('server')
    .description('echo TCP bytes; answer HTTP requests with what the server saw')
    .requiredOption('--address <ip:port>', 'address to listen on')
    .option('--name <name>', 'hostname to report')
    .action(async (o) => {
      try {
        const hp = parseHostPort(o.address);
        if (hp === undefined) throw new MeshError('AMESH_ERR_CONFIG', `--address: "${o.address}" is not ip:port`);
        const s = await startEchoServer(hp.host, hp.port, o.name);
        process.stdout.write(`echo server listening on ${hp.host}:${s.port}\n`);
        const stop = (): void => void s.close().then(() => process.exit(0));
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      } catch (e) {
        fatal(e);
      }
    });
  echo
    .command('client')
    .description('send N requests to an echo server, directly or through a SOCKS5 proxy (a ztunnel)')
    .requiredOption('--target <host:port>', 'echo server address (or a service VIP)')
    .option(
      '--socks5 <ip:port>',
      `SOCKS5 proxy, e.g. a ztunnel at <workload IP>:${SOCKS5_PORT} (started with UNSTABLE_ENABLE_SOCKS5=true)`,
    )
    .option(
      '--source <ip>',
      'local address to connect from; through SOCKS5 it defaults to the proxy IP, since ztunnel serves only its workload',
    )
    .option('-n, --count <n>', 'number of requests', '1')
    .option('--http', 'send HTTP GET instead of raw TCP')
    .option('--message <text>', 'TCP payload', 'hello amesh')
    .option('--timeout <ms>', 'per-request timeout', '5000')
    .addOption(
      new Option('-o, --output <format>', 'output format')
        .choices(['table', 'json', 'yaml'] as const)
        .default('table' as const),
    )
    .action(async (o) => {
      try {
        const count = Number(o.count);
        if (!Number.isInteger(count) || count < 1)
          throw new MeshError('AMESH_ERR_CONFIG', '--count must be a positive integer');
        const results = await runEchoClient({
          target: o.target,
          socks5: o.socks5,
          source: o.source,
          count,
          http: o.http === true,
          message: o.message,
          timeoutMs: Number(o.timeout),
        });
        const rows = results.map((r) => [
          String(r.i),
          r.ok ? 'ok' : 'FAILED',
          r.ms.toFixed(1),
          r.ok ? (r.response ?? '').replace(/\s+/g, ' ').slice(0, 100) : (r.error ?? ''),
        ]);
        // The table module brings the YAML printer: loaded by the client only, so a pod's echo server starts lighter.
        const { render } = await import('../lib/table.js');
        process.stdout.write(render(o.output, ['#', 'RESULT', 'MS', 'RESPONSE'], rows, results));
        process.exitCode = results.every((r) => r.ok) ? 0 : 1;
      } catch (e) {
        fatal(e);
      }
    });
  return echo;
}
