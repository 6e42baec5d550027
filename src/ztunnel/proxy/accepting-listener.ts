import net from 'node:net';
import { describeError } from '../../lib/errors.js';
import { formatHostPort } from '../../lib/ip.js';
import type { ProxyContext } from './proxy-context.js';
import { CAPTURE_SERVER_OPTIONS } from './socket-factory.js';

/**
 * A plain TCP listener of a capture port (15001, 15006) bound through the context's socket factory: it hands each
 * accepted socket to `handle`, keeps the open ones to close with it, and logs what `handle` did not expect.
 */
export class AcceptingListener {
  private server: net.Server | undefined;
  private readonly clients = new Set<net.Socket>();

  constructor(
    private readonly ctx: Pick<ProxyContext, 'log' | 'sockets'>,
    /** What the listener is, for logs ("inbound plaintext"). */
    private readonly component: string,
    private readonly host: string,
    private readonly port: number,
    private readonly handle: (client: net.Socket) => Promise<void>,
  ) {}

  get address(): string {
    return formatHostPort(this.host, this.port);
  }

  async start(): Promise<void> {
    const server = net.createServer(CAPTURE_SERVER_OPTIONS, (s) => {
      this.clients.add(s);
      s.once('close', () => this.clients.delete(s));
      s.on('error', () => undefined);
      void this.handle(s).catch((e: unknown) => {
        this.ctx.log.error({ component: this.component, error: describeError(e) }, 'unexpected connection failure');
        s.destroy();
      });
    });
    server.on('error', (e) =>
      this.ctx.log.error({ component: this.component, error: describeError(e), addr: this.address }, 'listener error'),
    );
    await this.ctx.sockets.listen(server, this.host, this.port);
    this.server = server;
  }

  /** Stops accepting; with `immediate`, closes the open connections too. */
  close(immediate: boolean): void {
    this.server?.close();
    if (immediate) for (const c of this.clients) c.destroy();
  }
}
