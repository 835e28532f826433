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
import type { ServedModel } from './load';

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
 * plugins, base or form targets. Scripts may `eval`: the WebAssembly GEMM's thread runner builds
 * its functions from source. Workers may be blob URLs (the GEMM and WebGPU workers
 * are made from source), and the page may fetch models from any https URL (`?model=URL`, the Hub)
 * and from a Hub on this machine (`?hub=http://127.0.0.1:PORT`, a local mirror).
 */
export const APP_CSP = [
  "default-src 'self'", "script-src 'self' 'unsafe-eval' 'wasm-unsafe-eval'", "worker-src 'self' blob:", "style-src 'self'",
  "img-src 'self' data: blob:", "connect-src 'self' https: http://localhost:* http://127.0.0.1:*", "object-src 'none'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
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

/** The files of a model directory the studio reads (a single-file safetensors checkpoint). */
const MODEL_FILES = new Set(['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja']);

/**
 * The served model for the app mounted at `mount`: `mount/served.json` names it and where its
 * files are (`served/`, or `served/NAME.gguf`), `mount/served/FILE` streams them. Only the files
 * the studio loads, only when the model is exactly its files (no merged adapter), and only a
 * single-file checkpoint. Returns false when `urlPath` is not one of these paths.
 */
export function sendServedModel(res: ServerResponse, served: ServedModel, mount: string, urlPath: string): boolean {
  if (urlPath !== `${mount}/served.json` && !urlPath.startsWith(`${mount}/served/`)) return false;
  const source = served.source.path, gguf = served.source.format === 'gguf';
  const usable = served.published === true && (gguf || fs.existsSync(path.join(source, 'model.safetensors')));
  if (!usable) throw new ApiError(404, `the served model '${served.name}' is not published for the studio (a merged adapter, or sharded weights)`, 'not_found_error', null, 'not_found');
  if (urlPath === `${mount}/served.json`) {
    const body = JSON.stringify({ name: served.name, url: gguf ? `served/${encodeURIComponent(path.basename(source))}` : 'served/' });
    res.writeHead(200, { ...ISOLATION_HEADERS, 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-cache' });
    res.end(body);
    return true;
  }
  let name: string;
  try {
    name = decodeURIComponent(urlPath.slice(`${mount}/served/`.length));
  } catch {
    throw new ApiError(400, `malformed path ${urlPath}`, 'invalid_request_error', null, 'bad_path');
  }
  const file = gguf ? (name === path.basename(source) ? source : null) : MODEL_FILES.has(name) ? path.join(source, name) : null;
  const stat = file ? fs.statSync(file, { throwIfNoEntry: false }) : undefined;
  if (!file || !stat?.isFile()) throw new ApiError(404, `no file ${urlPath}`, 'not_found_error', null, 'not_found');
  res.writeHead(200, { ...ISOLATION_HEADERS, 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream', 'content-length': stat.size, 'cache-control': 'no-cache' });
  // Streamed: the weights may be gigabytes.
  fs.createReadStream(file).on('error', () => res.destroy()).pipe(res);
  return true;
}
