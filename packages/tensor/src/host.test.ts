import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { compileOptimized, v8FlagFromArgs } from './host';
import { wasmApi, type WasmModule } from './wasm/api';

// V8's own test hooks (`%IsLiftoffFunction`, `%IsTurboFanFunction`): the syntax is accepted by
// functions parsed after the flag is set.
setFlagsFromString('--allow-natives-syntax');
const isTurboFan = new Function('f', 'return %IsTurboFanFunction(f)') as (f: unknown) => boolean;
const isLiftoff = new Function('f', 'return %IsLiftoffFunction(f)') as (f: unknown) => boolean;

/**
 * Bytes of `(module (func (export "f") (result i32) i32.const n))`, n a 5-byte LEB128: distinct
 * bytes for each n, so V8's cache of compiled modules (keyed by the bytes) never hands back a
 * module compiled by another call.
 */
function constModule(n: number): Uint8Array {
  const leb = [0, 1, 2, 3].map((i) => ((n >>> (7 * i)) & 0x7f) | 0x80).concat([(n >>> 28) & 0x0f]);
  const body = [0, 0x41, ...leb, 0x0b];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    1, 5, 1, 0x60, 0, 1, 0x7f, // type: () -> i32
    3, 2, 1, 0, // function 0 of type 0
    7, 5, 1, 1, 0x66, 0, 0, // export "f"
    10, body.length + 2, 1, body.length, ...body,
  ]);
}

const wasm = wasmApi!;
const exported = (m: WasmModule): (() => number) => new wasm.Instance(m, {}).exports.f as () => number;

describe('compileOptimized', () => {
  it('compiles every function with the optimizing compiler, then restores dynamic tiering', async () => {
    const seed = (Date.now() * 7919) >>> 4;
    const fast = exported(compileOptimized(() => new wasm.Module(constModule(seed))));
    const plain = exported(new wasm.Module(constModule(seed + 1)));
    expect(fast()).toBe(seed);
    expect(plain()).toBe(seed + 1);
    // The optimized code comes from a background compile job: wait for it (no call is needed).
    const deadline = Date.now() + 50_000;
    while (!isTurboFan(fast) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(isTurboFan(fast)).toBe(true);
    // Compiled after the flag was restored: baseline code until it runs hot (one call is not).
    expect(isLiftoff(plain)).toBe(true);
  });

  it('returns what compile returns and passes its error through', () => {
    expect(compileOptimized(() => 42)).toBe(42);
    expect(() => compileOptimized(() => { throw new RangeError('bad bytes'); })).toThrow('bad bytes');
    // Nested calls: the inner one neither sets nor restores the flag.
    expect(compileOptimized(() => compileOptimized(() => 'inner'))).toBe('inner');
  });
});

const tiering = (argv: string[], opts?: string): boolean => v8FlagFromArgs('wasm-dynamic-tiering', argv, opts);

describe('v8FlagFromArgs', () => {
  it('reads the flag from the command line, the last mention winning', () => {
    expect(tiering([])).toBe(true);
    expect(tiering(['--no-wasm-dynamic-tiering'])).toBe(false);
    expect(tiering(['--no_wasm_dynamic_tiering'])).toBe(false);
    expect(tiering(['--nowasm-dynamic-tiering'])).toBe(false);
    expect(tiering(['--wasm-dynamic-tiering=false'])).toBe(false);
    expect(tiering(['--no-wasm-dynamic-tiering', '--wasm-dynamic-tiering'])).toBe(true);
    expect(tiering(['--wasm-dynamic-tiering'], '--max-old-space-size=4096 --no-wasm-dynamic-tiering')).toBe(true);
    expect(tiering([], '--max-old-space-size=4096 --no-wasm-dynamic-tiering')).toBe(false);
    expect(tiering(['--wasm-dynamic-tiering-budget=100'])).toBe(true);
  });
});
