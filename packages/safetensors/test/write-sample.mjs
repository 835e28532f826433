// Writes a sample file with the *built* package, for python_reads_ours.py to check.
// Usage: node test/write-sample.mjs <out.safetensors>   (after `npx tsup` in packages/safetensors)
import { writeFile } from '../dist/index.js';

const out = process.argv[2];
if (!out) throw new Error('usage: node test/write-sample.mjs <out.safetensors>');
const bf16 = (x) => new Uint32Array(new Float32Array([x]).buffer)[0] >>> 16; // exact values only

writeFile(
  out,
  {
    'w.f32': { dtype: 'F32', shape: [3, 5], data: Float32Array.from({ length: 15 }, (_, i) => i * 0.5 - 3) },
    'w.bf16': { dtype: 'BF16', shape: [4], data: Uint16Array.from([1, -2, 0.5, 3.140625], bf16) },
    'w.i64': { dtype: 'I64', shape: [3], data: new BigInt64Array([-(2n ** 63n), 5n, 2n ** 63n - 1n]) },
    'w.u8': { dtype: 'U8', shape: [5], data: Uint8Array.from({ length: 5 }, (_, i) => i * 50) },
    'w.f16': { dtype: 'F16', shape: [2], data: new Uint16Array([0x3c00, 0xc000]) },
    'w.bool': { dtype: 'BOOL', shape: [3], data: new Uint8Array([1, 0, 1]) },
    'w.f64': { dtype: 'F64', shape: [2], data: new Float64Array([Math.E, -Math.PI]) },
    'w.c64': { dtype: 'C64', shape: [1], data: new Float32Array([1.5, -2]) },
    'w.f4': { dtype: 'F4', shape: [4], data: new Uint8Array([0x10, 0x32]) },
    'scalar': { dtype: 'I32', shape: [], data: new Int32Array([7]) },
    'empty': { dtype: 'F16', shape: [0], data: new Uint16Array(0) },
  },
  { source: 'apertus' },
);
console.log(`wrote ${out}`);
