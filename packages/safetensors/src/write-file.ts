// Streaming, atomic file writer: the header, then each tensor's bytes in order, into a temporary
// sibling of the file (@apertus/atomic-file: fsync, rename over the file, fsync of the directory).
// A crash leaves either the old file or the complete new one, never a truncated file. No buffer of
// the whole file is built.

import { writeFileAtomic, writeFileAtomicAsync, type AtomicWriteOptions } from '@apertus/atomic-file';
import { SafetensorsError, SafetensorsIoError } from './errors.js';
import { planSerialization, tensorBytes, type MetadataInput, type SerializationPlan, type TensorEntries } from './serialize.js';

/** Options of {@link writeFile}: `fsync` (default `true`; turn off only for scratch files). */
export type WriteFileOptions = AtomicWriteOptions;

function ioError(file: string, cause: unknown): SafetensorsIoError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new SafetensorsIoError('Io', `write failed: ${detail}`, { file, cause });
}

/** Write a planned file atomically (synchronous): the header, then each tensor's bytes. */
export function writePlanSync(path: string, plan: SerializationPlan, options: WriteFileOptions = {}): void {
  try {
    writeFileAtomic(path, (write) => {
      write(plan.header);
      for (const t of plan.tensors) write(tensorBytes(t, path));
    }, options);
  } catch (error) {
    throw error instanceof SafetensorsError ? error : ioError(path, error);
  }
}

/** Write a planned file atomically without blocking the event loop. */
export async function writePlanAsync(path: string, plan: SerializationPlan, options: WriteFileOptions = {}): Promise<void> {
  try {
    await writeFileAtomicAsync(path, async (write) => {
      await write(plan.header);
      for (const t of plan.tensors) await write(tensorBytes(t, path));
    }, options);
  } catch (error) {
    throw error instanceof SafetensorsError ? error : ioError(path, error);
  }
}

/** Write `text` to `file` atomically (the index of a sharded checkpoint). */
export function writeTextSync(file: string, text: string, options: WriteFileOptions = {}): void {
  try {
    writeFileAtomic(file, text, options);
  } catch (error) {
    throw ioError(file, error);
  }
}

/**
 * Write tensors to `path` as one safetensors file: validated first, then streamed (header, then
 * each tensor's bytes; lazy `data` producers are called one at a time), written to a temporary
 * sibling and renamed into place. See {@link MetadataInput} for the `__metadata__` default.
 */
export function writeFile(path: string, entries: TensorEntries, metadata?: MetadataInput, options?: WriteFileOptions): void {
  writePlanSync(path, planSerialization(entries, metadata, path), options);
}

/** Async {@link writeFile}. */
export async function writeFileAsync(path: string, entries: TensorEntries, metadata?: MetadataInput, options?: WriteFileOptions): Promise<void> {
  const plan = planSerialization(entries, metadata, path);
  await writePlanAsync(path, plan, options);
}
