// A small reverse proxy in front of httpskit instances (the postgres section): plain HTTP on
// loopback in, HTTPS with keep-alive to the instances, round robin. It stands in for the load
// balancer of a multi-instance deployment, so the instances' CPU per request can be compared
// between one instance and three behind the same proxy. argv[2] is `{ "targets": [url, …] }`.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent, request } from 'node:https';
import { serveControl } from './control.js';

const { targets } = JSON.parse(process.argv[2] ?? '{}') as { targets: string[] };
if (!Array.isArray(targets) || targets.length === 0) throw new Error('proxy: no targets');
// One agent per instance, enough sockets for the load generator's connections (no queueing here).
const upstreams = targets.map((target) => ({ url: new URL(target), agent: new Agent({ keepAlive: true, maxSockets: 64, rejectUnauthorized: false }) }));
let next = 0;

function forward(req: IncomingMessage, res: ServerResponse): void {
  const upstream = upstreams[next]!;
  next = (next + 1) % upstreams.length;
  const out = request(
    { host: upstream.url.hostname, port: upstream.url.port, path: req.url, method: req.method, headers: { ...req.headers, host: upstream.url.host }, agent: upstream.agent },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  out.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(out);
}

const server = createServer({ keepAlive: true }, forward);
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  serveControl({ kind: 'ready', url: `http://127.0.0.1:${port}`, httpUrl: '' });
});
