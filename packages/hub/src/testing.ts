// @apertus/hub/testing — a Hugging Face Hub on loopback for tests: model repositories held in
// memory, served on the routes Python huggingface_hub, @huggingface/hub and llama.cpp use:
//   GET  /api/models/{repo}[/revision/{rev}]            repository info (`sha`, `gated`, `siblings`)
//   GET  /api/models/{repo}/tree/{rev}[/{path}]         file listing (`recursive`, pages linked by `Link: rel="next"`)
//   HEAD|GET /{repo}/resolve/{rev}/{path}               the file: `X-Repo-Commit`, `ETag` (git blob id), ranges;
//                                                       an LFS file answers 302 to /_cdn/… with `X-Linked-Etag`
//                                                       (its SHA-256) and `X-Linked-Size`, as the Hub does
//   HEAD|GET /_cdn/{sha256}?…                           LFS contents (the CDN), ranges, the same headers again
//                                                       (huggingface_hub follows a same-host redirect and reads them there)
// and the Hub's errors: 401 RepoNotFound for an unknown (or private) repository without a token (404
// with one), 404 RevisionNotFound / EntryNotFound, 401 / 403 GatedRepo for a gated repository without
// a token / with a token not granted access, 401 for a token the server does not know. CORS is open
// (a browser page can use it). Every request is recorded, and a connection can be dropped mid-file.

import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A repository of the test Hub. */
export interface HubRepoFixture {
  /** Path → contents of the `main` branch (more branches or tags in `revisions`). */
  readonly files: Readonly<Record<string, string | Uint8Array>>;
  /** Other revisions (branch or tag → files). */
  readonly revisions?: Readonly<Record<string, Readonly<Record<string, string | Uint8Array>>>>;
  /** Which files are stored in LFS. Default: .safetensors, .gguf, .bin and files over 10 MB. */
  readonly lfs?: (path: string) => boolean;
  /** Gated: only these tokens (accounts that accepted the licence) may read its files. */
  readonly gated?: { readonly granted: readonly string[] };
  /** Private: only these tokens see it at all. */
  readonly private?: { readonly tokens: readonly string[] };
}

/** Options of {@link startHubServer}. */
export interface HubServerOptions {
  /** `owner/name` → repository. */
  readonly repos: Readonly<Record<string, HubRepoFixture>>;
  /** Tokens the server knows (default: every token a fixture names). Others get 401. */
  readonly tokens?: readonly string[];
  /** Entries per page of a tree listing. Default 1000. */
  readonly pageSize?: number;
}

/** A request the test Hub received. */
export interface HubRequest {
  readonly method: string;
  /** Path and query. */
  readonly url: string;
  /** The Range header, or null. */
  readonly range: string | null;
  /** The Authorization header, or null. */
  readonly authorization: string | null;
}

/** A running test Hub. */
export interface HubServer {
  /** Base URL (`http://127.0.0.1:<port>`), for HF_ENDPOINT. */
  readonly url: string;
  /** Every request so far. */
  readonly requests: HubRequest[];
  /** The commit of `revision` (default `main`) of `repo`. */
  commit(repo: string, revision?: string): string;
  /** Replace the files of a branch (a new commit; the branch moves to it). */
  push(repo: string, files: Readonly<Record<string, string | Uint8Array>>, branch?: string): string;
  /** The next `times` GETs of `file` (path in its repository) that reach byte `at` are cut there: the socket is destroyed. */
  dropAt(file: string, at: number, times?: number): void;
  /** Stop listening and drop open connections. */
  close(): Promise<void>;
}

interface StoredFile {
  readonly path: string;
  readonly bytes: Uint8Array;
  readonly blobId: string;
  readonly lfs: { readonly sha256: string; readonly pointerSize: number } | null;
}

interface Commit {
  readonly id: string;
  readonly files: Map<string, StoredFile>;
}

const defaultLfs = (p: string, size: number) => /\.(safetensors|gguf|bin)$/.test(p) || size > 10_000_000;
const hex = (alg: string, ...parts: (string | Uint8Array)[]) => {
  const h = createHash(alg);
  for (const p of parts) h.update(p);
  return h.digest('hex');
};
const gitBlobId = (bytes: Uint8Array) => hex('sha1', `blob ${bytes.length}\0`, bytes);

function makeCommit(files: Readonly<Record<string, string | Uint8Array>>, lfs: (p: string, size: number) => boolean, parent: string): Commit {
  const stored = new Map<string, StoredFile>();
  for (const [p, content] of Object.entries(files).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const bytes = typeof content === 'string' ? new TextEncoder().encode(content) : content;
    if (lfs(p, bytes.length)) {
      const sha256 = hex('sha256', bytes);
      const pointer = `version https://git-lfs.github.com/spec/v1\noid sha256:${sha256}\nsize ${bytes.length}\n`;
      stored.set(p, { path: p, bytes, blobId: gitBlobId(new TextEncoder().encode(pointer)), lfs: { sha256, pointerSize: pointer.length } });
    } else stored.set(p, { path: p, bytes, blobId: gitBlobId(bytes), lfs: null });
  }
  const id = hex('sha1', parent, ...[...stored.values()].map((f) => `${f.path}\0${f.blobId}\n`));
  return { id, files: stored };
}

/** Start a test Hub on 127.0.0.1 (a free port). */
export async function startHubServer(options: HubServerOptions): Promise<HubServer> {
  const requests: HubRequest[] = [];
  const drops = new Map<string, { at: number; times: number }>();
  const repos = new Map<string, { fixture: HubRepoFixture; refs: Map<string, string>; commits: Map<string, Commit> }>();
  const lfsOf = (f: HubRepoFixture) => (p: string, size: number) => (f.lfs ? f.lfs(p) : defaultLfs(p, size));
  for (const [name, fixture] of Object.entries(options.repos)) {
    const refs = new Map<string, string>(), commits = new Map<string, Commit>();
    for (const [rev, files] of [['main', fixture.files] as const, ...Object.entries(fixture.revisions ?? {})]) {
      const c = makeCommit(files, lfsOf(fixture), `${name}@${rev}`);
      commits.set(c.id, c);
      refs.set(rev, c.id);
    }
    repos.set(name, { fixture, refs, commits });
  }
  const known = new Set(options.tokens ?? [...repos.values()].flatMap((r) => [...(r.fixture.gated?.granted ?? []), ...(r.fixture.private?.tokens ?? [])]));
  const signature = hex('sha256', String(Math.random())).slice(0, 16);

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://hub');
    requests.push({ method: req.method ?? 'GET', url: url.pathname + url.search, range: req.headers.range ?? null, authorization: req.headers.authorization ?? null });
    const cors: Record<string, string> = {
      'access-control-allow-origin': '*',
      'access-control-expose-headers': 'X-Repo-Commit, X-Linked-Etag, X-Linked-Size, ETag, Content-Range, Content-Length, Accept-Ranges, X-Error-Code, Link, Location',
    };
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      const text = typeof body === 'string' ? body : JSON.stringify(body);
      res.writeHead(status, { ...cors, 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers });
      res.end(req.method === 'HEAD' ? undefined : text);
    };
    const fail = (status: number, code: string | null, message: string, headers: Record<string, string> = {}) => send(status, { error: message }, { ...(code ? { 'x-error-code': code } : {}), ...headers });
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { ...cors, 'access-control-allow-methods': 'GET, HEAD, OPTIONS', 'access-control-allow-headers': 'Authorization, Range, Content-Type, Accept, Accept-Encoding', 'access-control-max-age': '600' }).end();
      return;
    }
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? null;
    if (auth !== null && !known.has(auth)) return fail(401, null, 'Invalid credentials in Authorization header');

    const serveBytes = (file: StoredFile, headers: Record<string, string>) => {
      const size = file.bytes.length;
      const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
      let start = 0, end = size - 1, status = 200;
      if (m) {
        start = Number(m[1]);
        end = m[2] ? Math.min(Number(m[2]), size - 1) : size - 1;
        if (start >= size || start > end) return fail(416, null, 'Range Not Satisfiable', { 'content-range': `bytes */${size}` });
        status = 206;
        headers['content-range'] = `bytes ${start}-${end}/${size}`;
      }
      res.writeHead(status, { ...cors, ...headers, 'accept-ranges': 'bytes', 'content-type': 'application/octet-stream', 'content-length': String(end - start + 1) });
      if (req.method === 'HEAD') return res.end();
      const drop = drops.get(file.path);
      if (req.method === 'GET' && drop && drop.times > 0 && start < drop.at && drop.at <= end) {
        drop.times--;
        res.write(file.bytes.subarray(start, drop.at), () => res.socket?.destroy());
        return;
      }
      res.end(file.bytes.subarray(start, end + 1));
    };

    if (url.pathname.startsWith('/_cdn/')) {
      const sha = url.pathname.slice('/_cdn/'.length);
      const repo = repos.get(url.searchParams.get('repo') ?? '');
      const c = repo?.commits.get(url.searchParams.get('commit') ?? '');
      const file = c && [...c.files.values()].find((f) => f.lfs?.sha256 === sha);
      if (url.searchParams.get('sig') !== signature || !file || !c) return fail(403, null, 'Request has expired or the signature does not match');
      return serveBytes(file, { etag: `"${sha}"`, 'x-repo-commit': c.id, 'x-linked-etag': `"${sha}"`, 'x-linked-size': String(file.bytes.length) });
    }

    const api = /^\/api\/models\/([^/]+\/[^/]+)(?:\/(revision|tree)\/([^/]+)(\/.*)?)?$/.exec(url.pathname);
    const resolve = api ? null : /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
    const repoName = decodeURIComponent((api ?? resolve)?.[1] ?? '');
    const repo = repos.get(repoName);
    if ((!api && !resolve) || !repo || (repo.fixture.private && !(auth !== null && repo.fixture.private.tokens.includes(auth)))) {
      if (!api && !resolve) return fail(404, null, 'Not Found');
      return fail(auth === null ? 401 : 404, 'RepoNotFound', 'Repository not found');
    }
    const rev = decodeURIComponent(api ? (api[3] ?? 'main') : resolve![2]!);
    const commitId = repo.commits.has(rev) ? rev : repo.refs.get(rev);
    const commit = commitId !== undefined ? repo.commits.get(commitId) : undefined;
    if (!commit) return fail(404, 'RevisionNotFound', `Invalid rev id: ${rev}`);

    if (api && api[2] !== 'tree') {
      return send(200, {
        _id: hex('sha1', repoName).slice(0, 24), id: repoName, modelId: repoName, author: repoName.split('/')[0], sha: commit.id,
        private: repo.fixture.private !== undefined, gated: repo.fixture.gated ? 'manual' : false, disabled: false, downloads: 0, likes: 0,
        lastModified: '2026-01-01T00:00:00.000Z', tags: [], library_name: 'transformers', siblings: [...commit.files.keys()].map((rfilename) => ({ rfilename })),
      });
    }
    if (api) {
      const prefix = api[4] ? decodeURIComponent(api[4].slice(1)) : '';
      const recursive = url.searchParams.get('recursive') === 'true' || url.searchParams.get('recursive') === 'True';
      const dirs = new Set<string>();
      const entries: unknown[] = [];
      for (const f of commit.files.values()) {
        if (prefix && !f.path.startsWith(`${prefix}/`)) continue;
        const rel = prefix ? f.path.slice(prefix.length + 1) : f.path;
        const parts = rel.split('/');
        for (let i = 1; i < parts.length; i++) dirs.add([prefix, ...parts.slice(0, i)].filter(Boolean).join('/'));
        if (!recursive && parts.length > 1) continue;
        entries.push({ type: 'file', oid: f.blobId, size: f.bytes.length, path: f.path, ...(f.lfs ? { lfs: { oid: f.lfs.sha256, size: f.bytes.length, pointerSize: f.lfs.pointerSize } } : {}) });
      }
      for (const d of dirs) if (recursive || !d.slice(prefix ? prefix.length + 1 : 0).includes('/')) entries.push({ type: 'directory', oid: hex('sha1', d), size: 0, path: d });
      entries.sort((a, b) => ((a as { path: string }).path < (b as { path: string }).path ? -1 : 1));
      const size = options.pageSize ?? 1000;
      const cursor = Number(url.searchParams.get('cursor') ?? 0);
      const page = entries.slice(cursor, cursor + size);
      const headers: Record<string, string> = {};
      if (cursor + size < entries.length) {
        const next = new URL(url.href);
        next.searchParams.set('cursor', String(cursor + size));
        headers.link = `<http://${req.headers.host}${next.pathname}${next.search}>; rel="next"`;
      }
      return send(200, page, headers);
    }

    const filePath = resolve![3]!.split('/').map(decodeURIComponent).join('/');
    const file = commit.files.get(filePath);
    if (!file) return fail(404, 'EntryNotFound', `${filePath} does not exist on "${rev}"`, { 'x-repo-commit': commit.id });
    if (repo.fixture.gated && !(auth !== null && repo.fixture.gated.granted.includes(auth))) {
      return auth === null
        ? fail(401, 'GatedRepo', `Access to model ${repoName} is restricted. You must have access to it and be authenticated to access it. Please log in.`)
        : fail(403, 'GatedRepo', `Access to model ${repoName} is restricted and you are not in the authorized list. Visit https://huggingface.co/${repoName} to ask for access.`);
    }
    if (file.lfs) {
      const location = `/_cdn/${file.lfs.sha256}?repo=${encodeURIComponent(repoName)}&commit=${commit.id}&sig=${signature}`;
      res.writeHead(302, { ...cors, location, etag: `"${file.blobId}"`, 'x-repo-commit': commit.id, 'x-linked-etag': `"${file.lfs.sha256}"`, 'x-linked-size': String(file.bytes.length), 'content-length': '0' });
      return res.end();
    }
    return serveBytes(file, { etag: `"${file.blobId}"`, 'x-repo-commit': commit.id });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    commit(repo, revision = 'main') {
      const id = repos.get(repo)?.refs.get(revision);
      if (id === undefined) throw new Error(`test Hub: no ${repo}@${revision}`);
      return id;
    },
    push(repo, files, branch = 'main') {
      const r = repos.get(repo);
      if (!r) throw new Error(`test Hub: no ${repo}`);
      const c = makeCommit(files, lfsOf(r.fixture), r.refs.get(branch) ?? branch);
      r.commits.set(c.id, c);
      r.refs.set(branch, c.id);
      return c.id;
    },
    dropAt(file, at, times = 1) {
      drops.set(file, { at, times });
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
