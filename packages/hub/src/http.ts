// The one way this package talks to the Hub: `fetch` with the bearer token, and the Hub's error
// responses turned into typed errors by status and `X-Error-Code` (RepoNotFound, RevisionNotFound,
// EntryNotFound, GatedRepo), as huggingface_hub reads them; and the two API calls a download needs:
// the commit of a revision (`/api/models/{repo}/revision/{rev}`) and the commit's recursive file
// listing (`/api/models/{repo}/tree/{commit}`, pages linked by `Link: <…>; rel="next"`).
import { HubAccessError, HubError, HubHttpError, HubNotFoundError, HubOfflineError } from './errors';
import type { RepoFile } from './select';

/** The public Hub. */
export const DEFAULT_ENDPOINT = 'https://huggingface.co';

/** How to reach the Hub. */
export interface HubClient {
  /** Base URL (no trailing slash). */
  readonly endpoint: string;
  /** Bearer token, or null. */
  readonly token: string | null;
  /** The fetch to use (default the global one). */
  readonly fetch?: typeof fetch;
  /** Cancels every request. */
  readonly signal?: AbortSignal;
}

/** What a request is about, for the error messages. */
export interface RequestSubject {
  readonly repo: string;
  readonly revision?: string;
  readonly file?: string;
}

async function errorText(res: Response): Promise<string> {
  try {
    const text = await res.text();
    try {
      const j = JSON.parse(text) as { error?: unknown; message?: unknown };
      const m = j.error ?? j.message;
      if (typeof m === 'string') return m;
    } catch {
      // not JSON
    }
    return text.slice(0, 200).replace(/\s+/g, ' ').trim();
  } catch {
    return '';
  }
}

/** The typed error of a Hub response that is not OK. */
export async function responseError(client: HubClient, res: Response, s: RequestSubject): Promise<HubError> {
  const code = res.headers.get('x-error-code');
  const text = await errorText(res);
  const page = `${client.endpoint}/${s.repo}`;
  if (code === 'GatedRepo' || ((res.status === 401 || res.status === 403) && /gated|restricted/i.test(text))) {
    return new HubAccessError(s.repo, 'gated', res.status, client.token === null
      ? `a gated model: accept its licence on ${page} (logged in), then set HF_TOKEN to an access token of that account (${client.endpoint}/settings/tokens)`
      : `a gated model, and the account of HF_TOKEN has no access yet: accept its licence on ${page} (logged in as that account)`);
  }
  if (code === 'RevisionNotFound') return new HubNotFoundError(s.repo, 'revision', `no such revision (branch, tag or commit) on ${client.endpoint}`, s.revision ?? null);
  if (code === 'EntryNotFound') return new HubNotFoundError(s.repo, 'file', 'no such file in the repository', s.file ?? null);
  if (code === 'RepoNotFound' || res.status === 404 || (res.status === 401 && client.token === null)) {
    return new HubNotFoundError(s.repo, 'repository', `no such model on ${client.endpoint}${client.token === null ? ' (if it is private, set HF_TOKEN)' : ''}`);
  }
  if (res.status === 401) return new HubAccessError(s.repo, 'unauthorized', 401, `${client.endpoint} does not accept HF_TOKEN (invalid or expired: make a new one at ${client.endpoint}/settings/tokens)`);
  if (res.status === 403) return new HubAccessError(s.repo, 'unauthorized', 403, `${client.endpoint} refuses access${text ? `: ${text}` : ''}`);
  return new HubHttpError(res.status, `${s.repo}${s.file !== undefined ? `: ${s.file}` : ''}: HTTP ${res.status} from ${res.url || client.endpoint}${text ? `: ${text}` : ''}`);
}

/** A network failure (not an HTTP status): the Hub cannot be reached. */
export class HubUnreachableError extends HubOfflineError {}

/**
 * `fetch(url)` with the token; resolves with an OK (2xx, or 3xx when not followed) response.
 * @throws the typed error of the response (see {@link responseError}), HubUnreachableError when the network fails
 */
export async function hubFetch(client: HubClient, url: string, s: RequestSubject, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (client.token !== null) headers.set('authorization', `Bearer ${client.token}`);
  let res: Response;
  try {
    res = await (client.fetch ?? fetch)(url, { ...init, headers, ...(client.signal ? { signal: client.signal } : {}) });
  } catch (e) {
    if (client.signal?.aborted) throw e;
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new HubUnreachableError(s.repo, `cannot reach ${client.endpoint} (${cause?.code ?? cause?.message ?? (e as Error).message})`, { cause: e });
  }
  if (!res.ok && !(res.status >= 300 && res.status < 400)) throw await responseError(client, res, s);
  return res;
}

async function getJson(client: HubClient, url: string, s: RequestSubject): Promise<{ json: unknown; next: string | null }> {
  const res = await hubFetch(client, url, s, { headers: { accept: 'application/json' } });
  let json: unknown;
  try {
    json = await res.json();
  } catch (e) {
    throw new HubError(`${s.repo}: ${url} did not answer JSON (${(e as Error).message}): ${client.endpoint} may not be a Hub`);
  }
  const link = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
  if (link === undefined) return { json, next: null };
  // The token goes with the next page: only to the Hub itself.
  const next = new URL(link, url);
  if (next.origin !== new URL(client.endpoint).origin) throw new HubError(`${s.repo}: the listing's next page is on another host (${next.origin}); not followed`);
  return { json, next: next.href };
}

/** The commit a revision (branch, tag or commit) of `repo` is at, and whether the repository is gated. */
export async function resolveRevision(client: HubClient, repo: string, revision: string): Promise<{ commit: string; gated: boolean }> {
  const { json } = await getJson(client, `${client.endpoint}/api/models/${repo}/revision/${encodeURIComponent(revision)}`, { repo, revision });
  const { sha, gated } = (json ?? {}) as { sha?: unknown; gated?: unknown };
  if (typeof sha !== 'string' || !/^[0-9a-f]{40}$/.test(sha)) throw new HubError(`${repo}@${revision}: the Hub's answer has no commit id (sha): ${client.endpoint} may not be a Hub`);
  return { commit: sha, gated: gated !== false && gated !== undefined && gated !== null };
}

interface TreeEntry { type?: unknown; path?: unknown; size?: unknown; oid?: unknown; lfs?: { oid?: unknown; size?: unknown } | null }

/** Every file of `repo` at `commit` (the recursive tree listing, all pages). */
export async function listRepoFiles(client: HubClient, repo: string, commit: string): Promise<RepoFile[]> {
  const out: RepoFile[] = [];
  let url: string | null = `${client.endpoint}/api/models/${repo}/tree/${commit}?recursive=true`;
  while (url !== null) {
    const page: { json: unknown; next: string | null } = await getJson(client, url, { repo, revision: commit });
    if (!Array.isArray(page.json)) throw new HubError(`${repo}@${commit}: the file listing is not a list: ${client.endpoint} may not be a Hub`);
    for (const e of page.json as TreeEntry[]) {
      if (e.type !== 'file' || typeof e.path !== 'string') continue;
      const lfs = e.lfs && typeof e.lfs.oid === 'string' ? { sha256: e.lfs.oid, size: Number(e.lfs.size) } : null;
      out.push({ path: e.path, size: Number(e.size), blobId: typeof e.oid === 'string' ? e.oid : '', lfs });
    }
    url = page.next;
  }
  return out;
}

/** The URL of a file of `repo` at `commit`. */
export function resolveUrl(endpoint: string, repo: string, commit: string, file: string): string {
  return `${endpoint}/${repo}/resolve/${commit}/${file.split('/').map(encodeURIComponent).join('/')}`;
}
