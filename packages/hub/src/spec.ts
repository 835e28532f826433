// Hub model ids: `owner/name`, `owner/name@revision`, `owner/name:QUANT` (a GGUF file of the
// repository chosen by quantization, as `llama-server -hf` takes it) and `owner/name@revision:QUANT`.
// Repository names follow the Hub's rules (letters, digits, `_`, `-`, `.`; no `--` or `..`; not
// starting or ending with `-` or `.`; at most 96 characters a part); a revision is a branch, tag or
// commit (git ref characters, no `:`, which git refuses in ref names); a quantization is a GGUF
// type name such as Q4_K_M, case-insensitive.

/** A model on the Hub. */
export interface HubModelId {
  /** `owner/name`. */
  readonly repo: string;
  /** Branch, tag or commit; null means `main`. */
  readonly revision: string | null;
  /** GGUF type asked for (`Q4_K_M`, upper case); null means the repository's safetensors checkpoint, else its default GGUF. */
  readonly quant: string | null;
}

/** The revision a Hub id without `@revision` means. */
export const DEFAULT_REVISION = 'main';

const PART = /^(?![.-])(?!.*(?:--|\.\.))[\w.-]{1,96}(?<![.-])$/;
const REVISION = /^(?!.*\.\.)(?![/.])[\w.\-/]+(?<![/.])$/;
const QUANT = /^\w+$/;

/** True when `repo` is a valid `owner/name`. */
export function isRepoId(repo: string): boolean {
  const parts = repo.split('/');
  return parts.length === 2 && parts.every((p) => PART.test(p));
}

/** `owner/name[@revision][:QUANT]` as its parts; null when `spec` is not of that form. */
export function parseHubId(spec: string): HubModelId | null {
  let rest = spec;
  let quant: string | null = null;
  const colon = rest.lastIndexOf(':');
  if (colon >= 0) {
    quant = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!QUANT.test(quant)) return null;
  }
  let revision: string | null = null;
  const at = rest.indexOf('@');
  if (at >= 0) {
    revision = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!REVISION.test(revision)) return null;
  }
  if (!isRepoId(rest)) return null;
  return { repo: rest, revision, quant: quant === null ? null : quant.toUpperCase() };
}

/** The id written back: `owner/name[@revision][:QUANT]`. */
export function formatHubId(id: HubModelId): string {
  return `${id.repo}${id.revision !== null ? `@${id.revision}` : ''}${id.quant !== null ? `:${id.quant}` : ''}`;
}

/** The name a loaded Hub model goes by: `owner/name`, with `:QUANT` when a GGUF type was asked for. */
export function hubModelName(id: HubModelId): string {
  return `${id.repo}${id.quant !== null ? `:${id.quant}` : ''}`;
}
