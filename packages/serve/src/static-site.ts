/**
 * A static web app mounted under a path of the server (the studio under `/studio`): files of one
 * directory, with the cross-origin isolation headers (COOP `same-origin`, COEP `require-corp`) that
 * a page needs for SharedArrayBuffer, so WebAssembly runs on several threads in the tab. Paths
 * that leave the directory are refused.
 */
import fs from 'node:fs';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { ApiError } from './api-error';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.wasm': 'application/wasm',
};

/**
 * The Content-Security-Policy of a mounted app, the chat page's where the studio allows it: its own
 * scripts, styles and workers only (no inline ones), never framed (`frame-ancestors 'none'`), no
 * plugins, base or form targets. Scripts may `eval`: the WebAssembly GEMM's thread runner and
 * gpu.js build their functions from source. Workers may be blob URLs (the GEMM and WebGPU workers
 * are made from source), and the page may fetch models from any https URL (`?model=URL`).
 */
export const APP_CSP = [
  "default-src 'self'", "script-src 'self' 'unsafe-eval' 'wasm-unsafe-eval'", "worker-src 'self' blob:", "style-src 'self'",
  "img-src 'self' data: blob:", "connect-src 'self' https:", "object-src 'none'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
].join('; ');

/** The headers every file of a mounted app gets: cross-origin isolation and the page's security policy. */
export const ISOLATION_HEADERS: Readonly<Record<string, string>> = {
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-embedder-policy': 'require-corp',
  'cross-origin-resource-policy': 'same-origin',
  'x-content-type-options': 'nosniff',
  'content-security-policy': APP_CSP,
  'referrer-policy': 'no-referrer',
};

/**
 * Answer GET `urlPath` (under `mount`, e.g. `/studio`) from `dir`: `mount` redirects to `mount/`,
 * `mount/` is index.html. Throws ApiError 404 for a missing file or a path outside `dir`.
 */
export function sendStaticFile(res: ServerResponse, dir: string, mount: string, urlPath: string): void {
  if (urlPath === mount) {
    res.writeHead(308, { location: `${mount}/` });
    res.end();
    return;
  }
  let rel: string;
  try {
    rel = decodeURIComponent(urlPath.slice(mount.length + 1)) || 'index.html';
  } catch {
    throw new ApiError(400, `malformed path ${urlPath}`, 'invalid_request_error', null, 'bad_path');
  }
  const root = path.resolve(dir);
  const file = path.resolve(root, rel);
  let body: Buffer;
  try {
    if (!file.startsWith(root + path.sep) || rel.includes('\0')) throw new Error('outside');
    body = fs.readFileSync(file);
  } catch {
    throw new ApiError(404, `no file ${urlPath}`, 'not_found_error', null, 'not_found');
  }
  res.writeHead(200, {
    ...ISOLATION_HEADERS,
    'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
    'content-length': body.byteLength,
    'cache-control': 'no-cache',
  });
  res.end(body);
}
