// A tiny static server for the test pages: fixed files from memory, with the cross-origin
// isolation headers (COOP same-origin, COEP require-corp) when `isolated`, which a page needs for
// SharedArrayBuffer and so for the GEMM's Web Workers.

import http from 'node:http';
import type { AddressInfo } from 'node:net';

const TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.json': 'application/json', '.png': 'image/png' };

/** Serve `files` (URL path → contents); returns the base URL and a close function. */
export async function serveStatic(files: ReadonlyMap<string, string | Uint8Array>, isolated: boolean): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    const p = new URL(req.url ?? '/', 'http://x').pathname;
    const body = files.get(p === '/' ? '/index.html' : p);
    const headers: Record<string, string> = { 'cache-control': 'no-store' };
    if (isolated) {
      headers['cross-origin-opener-policy'] = 'same-origin';
      headers['cross-origin-embedder-policy'] = 'require-corp';
    }
    if (body === undefined) {
      res.writeHead(404, headers).end('not found');
      return;
    }
    headers['content-type'] = TYPES[p.slice(p.lastIndexOf('.'))] ?? (p === '/' ? TYPES['.html']! : 'application/octet-stream');
    res.writeHead(200, headers).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
