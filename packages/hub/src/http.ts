// The one way this package talks to the Hub: `fetch` with the bearer token, and the Hub's error
// responses turned into typed errors by status and `X-Error-Code` (RepoNotFound, RevisionNotFound,
// EntryNotFound, GatedRepo), as huggingface_hub reads them. The repository calls (revision → commit,
// the file listing) are @huggingface/hub's `modelInfo` and `listFiles` running over this `fetch`.

import { listFiles, modelInfo } from '@huggingface/hub';
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

/** A `fetch` for @huggingface/hub's functions: the token added, errors typed. */
function fetchFor(client: HubClient, s: RequestSubject): typeof fetch {
  return (input, init) => hubFetch(client, input instanceof Request ? input.url : String(input), s, init);
}

/** The commit a revision (branch, tag or commit) of `repo` is at, and whether the repository is gated. */
export async function resolveRevision(client: HubClient, repo: string, revision: string): Promise<{ commit: string; gated: boolean }> {
  const info = await modelInfo({ name: repo, revision, hubUrl: client.endpoint, fetch: fetchFor(client, { repo, revision }), additionalFields: ['sha'] });
  const commit = (info as { sha?: unknown }).sha;
  if (typeof commit !== 'string' || !/^[0-9a-f]{40}$/.test(commit)) throw new HubError(`${repo}@${revision}: the Hub's answer has no commit id (sha): ${client.endpoint} may not be a Hub`);
  return { commit, gated: info.gated !== false && info.gated !== undefined };
}

/** Every file of `repo` at `commit` (the recursive tree listing, all pages). */
export async function listRepoFiles(client: HubClient, repo: string, commit: string): Promise<RepoFile[]> {
  const out: RepoFile[] = [];
  for await (const e of listFiles({ repo: { type: 'model', name: repo }, revision: commit, recursive: true, hubUrl: client.endpoint, fetch: fetchFor(client, { repo, revision: commit }) })) {
    if (e.type !== 'file') continue;
    out.push({ path: e.path, size: e.size, blobId: e.oid ?? '', lfs: e.lfs ? { sha256: e.lfs.oid, size: e.lfs.size } : null });
  }
  return out;
}

/** The URL of a file of `repo` at `commit`. */
export function resolveUrl(endpoint: string, repo: string, commit: string, file: string): string {
  return `${endpoint}/${repo}/resolve/${commit}/${file.split('/').map(encodeURIComponent).join('/')}`;
}
