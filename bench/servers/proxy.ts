// A small reverse proxy in front of httpskit instances (the postgres section): plain HTTP on
// loopback in, HTTPS with keep-alive to the instances, round robin. It stands in for the load
// balancer of a multi-instance deployment, so the instances' CPU per request can be compared
// between one instance and three behind the same proxy. argv[2] is `{ "targets": [url, …] }`.
// The `retarget` call points it at other instances with a fixed number of connections to each,
// opened before it returns (the rotating comparison, see bench/postgres-proxy.ts).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent, request } from 'node:https';
import { serveControl } from './control.js';

interface Upstream {
  readonly url: URL;
  readonly agent: Agent;
}

const { targets } = JSON.parse(process.argv[2] ?? '{}') as { targets: string[] };
if (!Array.isArray(targets) || targets.length === 0) throw new Error('proxy: no targets');
// One agent per instance, enough sockets for the load generator's connections (no queueing here).
const upstreamsOf = (urls: readonly string[], sockets: number): Upstream[] =>
  // FIFO: requests take the connections in turn, so every one of a fixed set stays in use (with LIFO,
  // the default, a light load reuses one and lets the others reach the server's idle time-out).
  urls.map((target) => ({ url: new URL(target), agent: new Agent({ keepAlive: true, maxSockets: sockets, scheduling: 'fifo', rejectUnauthorized: false }) }));
let upstreams = upstreamsOf(targets, 64);
let next = 0;
// Connections opened to the instances (each a TLS handshake the instance pays for), for the bench.
const seen = new WeakSet<object>();
let opened = 0;
const count = (socket: object): void => {
  if (seen.has(socket)) return;
  seen.add(socket);
  opened++;
};

function forward(req: IncomingMessage, res: ServerResponse): void {
  const upstream = upstreams[next % upstreams.length]!;
  next = (next + 1) % upstreams.length;
  const out = request(
    { host: upstream.url.hostname, port: upstream.url.port, path: req.url, method: req.method, headers: { ...req.headers, host: upstream.url.host }, agent: upstream.agent },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  out.on('socket', count);
  out.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(out);
}

/** `sockets` requests at once to `path` on one upstream: opens that many connections (TLS handshakes done). */
function open(upstream: Upstream, sockets: number, path: string): Promise<void> {
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      request({ host: upstream.url.hostname, port: upstream.url.port, path, agent: upstream.agent }, (answer) => {
        answer.resume();
        answer.on('end', () => resolve());
      })
        .on('error', reject)
        .end();
    });
  return Promise.all(Array.from({ length: sockets }, one)).then(() => undefined);
}

const server = createServer({ keepAlive: true }, forward);
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  serveControl(
    { kind: 'ready', url: `http://127.0.0.1:${port}`, httpUrl: '' },
    {
      retarget: async (urls: string[], sockets: number, path: string) => {
        const fresh = upstreamsOf(urls, sockets);
        await Promise.all(fresh.map((upstream) => open(upstream, sockets, path)));
        const old = upstreams;
        upstreams = fresh;
        next = 0;
        for (const upstream of old) upstream.agent.destroy();
        return null;
      },
      /** Connections opened to the instances since the last call. */
      opened: async () => {
        const n = opened;
        opened = 0;
        return n;
      },
    },
  );
});
