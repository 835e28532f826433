// Reading a whole safetensors file from what a browser hands over: an ArrayBuffer, a `fetch`
// Response or a File/Blob (the file picker's result). The bytes are read once, then validated and
// served as a SafetensorsBuffer.

import { SafetensorsBuffer } from './deserialize.js';
import { SafetensorsIoError } from './errors.js';

/** Something that holds a whole safetensors file: bytes, a `fetch` Response, or a File/Blob. */
export type SafetensorsSource =
  | ArrayBuffer
  | Uint8Array
  | { arrayBuffer(): Promise<ArrayBuffer>; readonly ok?: boolean; readonly status?: number; readonly url?: string; readonly name?: string };

/**
 * Read and validate a safetensors file from an ArrayBuffer, a `fetch` Response or a File/Blob.
 * `file` labels errors (default: the Response's URL or the File's name). A Response that is not
 * ok (HTTP status outside 200..299) is refused with `SafetensorsIoError`.
 */
export async function readSafetensors(source: SafetensorsSource, file?: string): Promise<SafetensorsBuffer> {
  if (source instanceof Uint8Array) return new SafetensorsBuffer(source, file);
  if (source instanceof ArrayBuffer) return new SafetensorsBuffer(new Uint8Array(source), file);
  const label = file ?? (source.url || source.name || undefined);
  if (source.ok === false) throw new SafetensorsIoError('Io', `fetch failed: HTTP status ${source.status ?? '?'}`, { file: label });
  let bytes: ArrayBuffer;
  try {
    bytes = await source.arrayBuffer();
  } catch (e) {
    throw new SafetensorsIoError('Io', `read failed: ${e instanceof Error ? e.message : String(e)}`, { file: label, cause: e });
  }
  return new SafetensorsBuffer(new Uint8Array(bytes), label);
}
