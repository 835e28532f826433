// Which browsers and names may talk to the server: CORS, same-origin checks and DNS-rebinding
// protection, shared by HTTP routes and the WebSocket upgrade.
//
// * A request with an `Origin` header (every browser fetch, every browser WebSocket) is accepted
//   only when the origin is the server's own (`Origin` host = `Host`) or listed in `corsOrigins`.
//   Browsers do not apply the same-origin policy to WebSockets, so without this any web page could
//   open `/v1/ws` and read the model's output.
// * Bound to a loopback address, the `Host` header must name a loopback host (`localhost`,
//   `*.localhost`, 127.0.0.0/8, `[::1]`) or one of `allowedHosts`: a page on `evil.example`
//   whose DNS name is re-pointed at 127.0.0.1 sends `Host: evil.example` and is refused.
// * CORS headers are sent only for listed origins; a preflight (`OPTIONS` with
//   `Access-Control-Request-Method`) from a listed origin is answered 204, from any other 403.
// JSON-only POST bodies (see http-util `requireJson`) close the last gap: without a preflight, a
// page can only send `text/plain`, form or multipart bodies, and those are answered 415.

import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import { ApiError } from './api-error';

/** Options of {@link OriginGuard}. */
export interface OriginGuardOptions {
  /** Origins (`https://app.example:3000`, or `*`) allowed to call the API from a browser. Default none. */
  corsOrigins?: readonly string[];
  /** Extra `Host` names accepted while bound to loopback (e.g. a reverse proxy's name). */
  allowedHosts?: readonly string[];
}

const ALLOWED_METHODS = 'GET, POST, OPTIONS';

/** Host part of a `Host` header or URL host (`[::1]:8080` → `::1`, `LocalHost:80` → `localhost`). */
function hostname(host: string): string | null {
  try {
    return new URL(`http://${host}`).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return null;
  }
}

/** True for `localhost`, `*.localhost`, 127.0.0.0/8 and ::1. */
export function isLoopbackHost(name: string): boolean {
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  if (isIP(name) === 4) return name.startsWith('127.');
  if (isIP(name) === 6) return name === '::1' || name === '0:0:0:0:0:0:0:1';
  return false;
}

/** Normalised `scheme://host[:port]` of an origin string, or null when it is not one. */
function normalOrigin(origin: string): string | null {
  if (origin === 'null') return 'null';
  try {
    const u = new URL(origin);
    return u.origin === 'null' ? null : u.origin;
  } catch {
    return null;
  }
}

/** The request checks and CORS answers of one server (see the file header). */
export class OriginGuard {
  private readonly origins: ReadonlySet<string>;
  private readonly anyOrigin: boolean;
  private readonly hosts: ReadonlySet<string>;
  /** Set once the server listens: whether its address is a loopback address. */
  loopback = false;

  /** A guard for the given CORS origins and extra host names (origins are compared in normalised form). */
  constructor(options: OriginGuardOptions = {}) {
    const list = options.corsOrigins ?? [];
    this.anyOrigin = list.includes('*');
    this.origins = new Set(list.filter((o) => o !== '*').map((o) => normalOrigin(o) ?? o));
    this.hosts = new Set((options.allowedHosts ?? []).map((h) => hostname(h) ?? h.toLowerCase()));
  }

  /** Whether `origin` may use the API cross-origin (CORS). */
  corsAllowed(origin: string): boolean {
    if (this.anyOrigin) return true;
    const o = normalOrigin(origin);
    return o !== null && this.origins.has(o);
  }

  /**
   * Check a request (HTTP or WebSocket upgrade); returns the 403 to answer, or null when it may
   * proceed. Requests without `Origin` (curl, SDKs, server-side code) pass the origin check.
   */
  check(headers: IncomingHttpHeaders): ApiError | null {
    const host = headers.host;
    if (this.loopback && host !== undefined) {
      const name = hostname(host);
      if (name === null || (!isLoopbackHost(name) && !this.hosts.has(name))) {
        return new ApiError(403, `Host '${host}' is not allowed: the server is bound to a loopback address and answers only loopback host names (DNS-rebinding protection; see --allowed-host)`, 'invalid_request_error', null, 'host_not_allowed');
      }
    }
    const origin = headers.origin;
    if (origin === undefined) return null;
    if (this.corsAllowed(origin)) return null;
    const o = normalOrigin(origin);
    if (o !== null && o !== 'null' && host !== undefined && new URL(o).host === hostOf(host)) return null;
    return new ApiError(403, `Origin '${origin}' is not allowed (start the server with --cors-origin ${origin} to allow it)`, 'invalid_request_error', null, 'origin_not_allowed');
  }

  /** CORS response headers for a request from an allowed origin (none otherwise). */
  corsHeaders(headers: IncomingHttpHeaders): Record<string, string> {
    const origin = headers.origin;
    if (origin === undefined || !this.corsAllowed(origin)) return {};
    return { 'access-control-allow-origin': origin, vary: 'Origin', 'access-control-expose-headers': 'x-request-id' };
  }

  /**
   * Headers of the answer to a CORS preflight: the allowed methods and the requested headers
   * (`authorization`, `content-type`, the `openai` client's `x-stainless-*`…), cached 10 minutes.
   * Null when the origin is not allowed.
   */
  preflight(headers: IncomingHttpHeaders): Record<string, string> | null {
    const origin = headers.origin;
    if (origin === undefined || !this.corsAllowed(origin)) return null;
    const requested = headers['access-control-request-headers'];
    return {
      ...this.corsHeaders(headers),
      vary: 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers',
      'access-control-allow-methods': ALLOWED_METHODS,
      ...(requested ? { 'access-control-allow-headers': requested } : {}),
      'access-control-max-age': '600',
    };
  }
}

/** `host[:port]` as URL.host writes it (default port 80 dropped, lower case). */
function hostOf(host: string): string | null {
  try {
    return new URL(`http://${host}`).host;
  } catch {
    return null;
  }
}
