import http from 'node:http';
import { EventEmitter, once } from 'node:events';
import path from 'node:path';

/**
 * A stand-in for the node agent's plugin server: `POST /cmdadd` on `<runDir>/pluginevent.sock` (istio
 * cni/pkg/nodeagent/cni-watcher.go), recording each body and answering `status` (and `message` as the body), to show
 * what the plugin sends and how it takes each answer; the plugin against the real agent is in cni-agent-netns.test.ts.
 */
export class PluginEventServer {
  readonly bodies: string[] = [];
  status = 200;
  message = '';
  private readonly server: http.Server;
  private readonly posted = new EventEmitter();

  private constructor(readonly socketPath: string) {
    this.server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        if (req.method === 'POST' && req.url === '/cmdadd') {
          this.bodies.push(body);
          this.posted.emit('posted');
          res.writeHead(this.status).end(this.message);
        } else {
          res.writeHead(404).end();
        }
      });
    });
  }

  static async start(runDir: string): Promise<PluginEventServer> {
    const s = new PluginEventServer(path.join(runDir, 'pluginevent.sock'));
    s.server.listen(s.socketPath);
    await once(s.server, 'listening');
    return s;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, 'close');
  }
}
