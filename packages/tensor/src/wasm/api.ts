/**
 * The slice of the WebAssembly JS API the GEMM engine uses, typed locally: the package compiles
 * against `lib: ES2023` without DOM typings, which is where `WebAssembly` is normally declared.
 */

/** A (shared) `WebAssembly.Memory`. */
export interface WasmMemory {
  /** The current backing buffer (a new object after each grow). */
  readonly buffer: ArrayBuffer | SharedArrayBuffer;
  /** Add `deltaPages` 64 KiB pages; returns the previous size in pages, throws RangeError past the maximum. */
  grow(deltaPages: number): number;
}

/** A compiled `WebAssembly.Module` (opaque; it can be posted to workers). */
export interface WasmModule {
  readonly __wasmModule?: never;
}

/** The global `WebAssembly` object, as far as it is used here. */
export interface WasmApi {
  /** Whether the bytes are a valid module for this runtime (features included). */
  validate(bytes: Uint8Array): boolean;
  /** Compile a module synchronously. */
  Module: new (bytes: Uint8Array) => WasmModule;
  /** Create a memory (shared: backed by a SharedArrayBuffer). */
  Memory: new (descriptor: { initial: number; maximum: number; shared: boolean }) => WasmMemory;
  /** Instantiate a module synchronously. */
  Instance: new (module: WasmModule, imports: Record<string, Record<string, unknown>>) => { exports: Record<string, unknown> };
}

/** The runtime's `WebAssembly`, or null where there is none. */
export const wasmApi: WasmApi | null = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly ?? null;
