// A small TLS-terminating load balancer for the multi-instance test (S-3): HTTPS in front,
// round robin over HTTPS backends, `X-Forwarded-For` and `X-Forwarded-Proto` set as nginx's
// `proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for` would. A backend that refuses the
// connection is skipped (the request was never sent), as a real balancer routes around a dead
// instance. For the test's own use, `x-test-backend: N` pins a request to backend N and
// `x-test-client: ADDR` stands in for the client's address.
import { createServer, request, Agent, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ForwardingProxy {
  readonly url: string;
  /** How many requests each backend answered. */
  readonly answered: number[];
  close(): Promise<void>;
}

export async function startForwardingProxy(options: { backends: readonly string[]; cert: string; key: string; ca: string }): Promise<ForwardingProxy> {
  const backends = options.backends.map((url) => new URL(url));
  const agents = backends.map(() => new Agent({ ca: options.ca, keepAlive: true, maxSockets: 64 }));
  const answered = backends.map(() => 0);
  let next = 0;

  function forward(req: IncomingMessage, res: ServerResponse, body: Buffer, index: number, triesLeft: number): void {
    const target = backends[index];
    if (target === undefined) throw new Error(`no backend ${index}`);
    const headers = { ...req.headers };
    const client = typeof headers['x-test-client'] === 'string' ? headers['x-test-client'] : (req.socket.remoteAddress ?? '');
    delete headers['x-test-client'];
    delete headers['x-test-backend'];
    delete headers.connection;
    headers['x-forwarded-for'] = headers['x-forwarded-for'] === undefined ? client : `${String(headers['x-forwarded-for'])}, ${client}`;
    headers['x-forwarded-proto'] = 'https';
    const upstream = request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers, agent: agents[index], servername: 'localhost' },
      (answer) => {
        answered[index] = (answered[index] ?? 0) + 1;
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        // A backend killed half-way through its answer: the client's connection is cut too.
        answer.on('aborted', () => res.destroy());
        answer.on('error', () => res.destroy());
      },
    );
    // A backend that hangs is as good as dead to the client: a real balancer times out too.
    upstream.setTimeout(30_000, () => upstream.destroy(new Error('backend timed out')));
    upstream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNREFUSED' && triesLeft > 1) {
        forward(req, res, body, (index + 1) % backends.length, triesLeft - 1);
        return;
      }
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`proxy: ${error.message}`);
    });
    upstream.end(body);
  }

  const server: Server = createServer({ cert: options.cert, key: options.key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const pinned = req.headers['x-test-backend'];
      const index = typeof pinned === 'string' ? Number(pinned) : next++ % backends.length;
      forward(req, res, Buffer.concat(chunks), index, typeof pinned === 'string' ? 1 : backends.length);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://localhost:${port}`,
    answered,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      for (const agent of agents) agent.destroy();
    },
  };
}
