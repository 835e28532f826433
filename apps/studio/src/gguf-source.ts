// A GGUF model for the tab (llama.cpp's single-file format, as `apertus-quantize` or llama.cpp's
// converter writes it) picked from disk, read from memory by @apertus/pretrained's browser loader
// (a GGUF URL or Hub id goes through model-source.ts). Quantized matrices stay packed (Q4_K, Q8_0, ...), so the model is
// for chat; its tokenizer comes from the file's `tokenizer.ggml.*` metadata.

import { pretrainedFromGguf } from '@apertus/pretrained';
import type { StudioModel } from './model-source';

/** The model in the GGUF bytes `bytes`; `name` names it on the page and in errors. */
export function modelFromGgufBytes(bytes: Uint8Array, name: string): StudioModel {
  return { ...pretrainedFromGguf(bytes, name), name };
}

/** The GGUF file the user picked (`<input type=file accept=.gguf>`). */
export async function modelFromGgufFile(file: File): Promise<StudioModel> {
  return modelFromGgufBytes(new Uint8Array(await file.arrayBuffer()), file.name);
}
