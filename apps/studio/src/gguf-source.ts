// A GGUF model for the tab (llama.cpp's single-file format, as `apertus-quantize` or llama.cpp's
// converter writes it): picked from disk or fetched from a URL, read from memory by
// @apertus/gguf's browser entry. Quantized matrices stay packed (Q4_K, Q8_0, ...), so the model is
// for chat; its tokenizer comes from the file's `tokenizer.ggml.*` metadata.

import { GgufFile, loadGgufFile } from '@apertus/gguf';
import type { StudioModel } from './model-source';

/** The model in the GGUF bytes `bytes`; `name` names it on the page and in errors. */
export function modelFromGgufBytes(bytes: Uint8Array, name: string): StudioModel {
  const loaded = loadGgufFile(GgufFile.fromBytes(bytes, name));
  if (loaded.tokenizer === null) throw new Error(`${name}: the GGUF file has no tokenizer (tokenizer.ggml.*)`);
  return { name, model: loaded.model, tokenizer: loaded.tokenizer, tokenizerFiles: {} };
}

/** The GGUF file the user picked (`<input type=file accept=.gguf>`). */
export async function modelFromGgufFile(file: File): Promise<StudioModel> {
  return modelFromGgufBytes(new Uint8Array(await file.arrayBuffer()), file.name);
}

/** The GGUF file at `url`, named `name` (default: the file's name). */
export async function modelFromGgufUrl(url: string, name?: string): Promise<StudioModel> {
  const r = await fetch(new URL(url, location.href));
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return modelFromGgufBytes(new Uint8Array(await r.arrayBuffer()), name ?? (url.slice(url.lastIndexOf('/') + 1) || url));
}
