// H-5: the scrape listener. Plain HTTP on its own port (a scrape carries no secret, and Prometheus
// scrapes plain HTTP by default), bound to the service's --host. Only GET/HEAD /metrics. L-1's
// limits hold here as on every listener (L-2 amended): Node's defaults held a half request line
// for about 67 s.
import { Buffer } from 'node:buffer';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { problem } from '../http/problem.js';
import { cutOverPipelined, listen, nodeHttpLimits, origin, type HttpLimits } from '../http/server.js';
import { EXPOSITION_CONTENT_TYPE } from './exposition.js';

export interface MetricsListener {
  readonly url: string;
  close(): Promise<void>;
}

export async function startMetricsListener(host: string, port: number, render: () => string, limits: HttpLimits): Promise<MetricsListener> {
  const server = createServer(nodeHttpLimits(limits), (req, res) => {
    // A client that pipelines scrapes and never reads holds no more of them than on the service's listeners.
    if (!cutOverPipelined(req, res)) answer(req, res, render);
  });
  await listen(server, port, host);
  const url = `${origin('http', host, (server.address() as AddressInfo).port)}/metrics`;
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // A scraper keeps its connection open between scrapes; closing must not wait for it.
        server.closeAllConnections();
      }),
  };
}

function answer(req: IncomingMessage, res: ServerResponse, render: () => string): void {
  const path = (req.url ?? '').split('?')[0];
  const common = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' };
  // Refusals are problem documents (E-1), like the main listener's.
  const refuse = (status: 404 | 405, headers: Readonly<Record<string, string>>, body: object): void => {
    res.writeHead(status, { ...common, ...headers, 'content-type': 'application/problem+json; charset=utf-8' });
    res.end(req.method === 'HEAD' ? undefined : JSON.stringify(body));
  };
  if (path !== '/metrics') {
    refuse(404, {}, problem(404, 'not-found', { detail: 'This listener serves /metrics only.' }));
  } else if (req.method !== 'GET' && req.method !== 'HEAD') {
    refuse(405, { allow: 'GET, HEAD' }, problem(405, 'method-not-allowed', { detail: 'Allowed: GET, HEAD.' }));
  } else {
    const body = render();
    res.writeHead(200, { ...common, 'content-type': EXPOSITION_CONTENT_TYPE, 'content-length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
  }
}
