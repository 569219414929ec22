// H-5: the scrape listener. Plain HTTP on its own port (a scrape carries no secret, and Prometheus
// scrapes plain HTTP by default), bound to the service's --host. Only GET/HEAD /metrics.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { listen, origin } from '../http/server.js';
import { EXPOSITION_CONTENT_TYPE } from './exposition.js';

export interface MetricsListener {
  readonly url: string;
  close(): Promise<void>;
}

export async function startMetricsListener(host: string, port: number, render: () => string): Promise<MetricsListener> {
  const server = createServer({ requireHostHeader: false }, (req, res) => answer(req, res, render));
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
  if (path !== '/metrics') {
    res.writeHead(404, { ...common, 'content-type': 'text/plain; charset=utf-8' }).end('Not found: scrape /metrics\n');
  } else if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { ...common, allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('Method not allowed: use GET\n');
  } else {
    const body = render();
    res.writeHead(200, { ...common, 'content-type': EXPOSITION_CONTENT_TYPE, 'content-length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
  }
}
