// Every block format's dequantization against gguf-py's (`gguf.quants.dequantize`), bit for bit:
// the committed golden blocks (golden.json, made by `gguf_py_reference.py golden`) by the sha256 of
// their float32 values, and fresh random blocks against the peers venv's gguf-py itself. Random
// bytes everywhere except the f16 scale fields, which hold random finite f16 values (subnormals,
// zeros, both signs, up to 65504).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { peerPython } from '@apertus/peers';
import { describe, expect, it } from 'vitest';
import { Rng } from '../random';
import { blockParts, QUANT_FORMATS, type QuantFormat } from './index';

const SCRIPT = path.join(import.meta.dirname, 'gguf_py_reference.py');
const GOLDEN = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'golden.json'), 'utf8')) as Record<string, { blocks: string; sha256: string }>;

/** The f16 fields of each format (as in gguf_py_reference.py). */
const F16_FIELDS: Record<string, number[]> = {
  Q4_0: [0], Q4_1: [0, 2], Q5_0: [0], Q5_1: [0, 2], Q8_0: [0], Q2_K: [80, 82], Q3_K: [108],
  Q4_K: [0, 2], Q5_K: [0, 2], Q6_K: [208], IQ4_NL: [0], IQ4_XS: [0],
};

function randomBlocks(f: QuantFormat, n: number, rng: Rng): Uint8Array {
  const out = Uint8Array.from({ length: n * f.blockBytes }, () => Math.floor(rng.uniform() * 256));
  for (let b = 0; b < n; b++) {
    for (const o of F16_FIELDS[f.ggml]!) {
      let bits = Math.floor(rng.uniform() * 65536);
      if ((bits & 0x7c00) === 0x7c00) bits &= 0x83ff;
      out[b * f.blockBytes + o] = bits & 255;
      out[b * f.blockBytes + o + 1] = bits >> 8;
    }
  }
  return out;
}

const dequantize = (f: QuantFormat, bytes: Uint8Array): Float32Array => {
  const out = new Float32Array((bytes.length / f.blockBytes) * f.blockValues);
  f.dequantize(bytes, out);
  return out;
};

describe('block formats vs gguf-py', () => {
  it('golden.json covers every format', () => {
    expect(Object.keys(GOLDEN).sort()).toEqual(Object.values(QUANT_FORMATS).map((f) => f.ggml).sort());
  });

  for (const f of Object.values(QUANT_FORMATS)) {
    it(`${f.ggml}: the golden blocks dequantize to gguf-py's values (sha256 of the float32 bytes)`, () => {
      const bytes = new Uint8Array(Buffer.from(GOLDEN[f.ggml]!.blocks, 'base64'));
      const v = dequantize(f, bytes);
      expect(createHash('sha256').update(new Uint8Array(v.buffer)).digest('hex')).toBe(GOLDEN[f.ggml]!.sha256);
    });
  }

  it('fresh random blocks of every format dequantize to what the peers venv\'s gguf-py computes, bit for bit', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-dtypes-'));
    try {
      const rng = new Rng(11), cases: [QuantFormat, Uint8Array][] = [];
      for (const f of Object.values(QUANT_FORMATS)) {
        const bytes = randomBlocks(f, f.blockValues === 32 ? 64 : 16, rng);
        fs.writeFileSync(path.join(dir, `${f.name}.in`), bytes);
        cases.push([f, bytes]);
      }
      fs.writeFileSync(path.join(dir, 'cases.txt'), cases.map(([f]) => `${f.name} ${f.ggml}`).join('\n') + '\n');
      execFileSync(peerPython(), [SCRIPT, 'dequantize', dir], { stdio: 'inherit' });
      for (const [f, bytes] of cases) {
        const want = new Uint32Array(new Uint8Array(fs.readFileSync(path.join(dir, `${f.name}.out`))).buffer);
        const got = new Uint32Array(dequantize(f, bytes).buffer);
        const bad = got.findIndex((u, i) => u !== want[i]);
        expect({ type: f.ggml, length: got.length, firstMismatch: bad }).toEqual({ type: f.ggml, length: want.length, firstMismatch: -1 });
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the integer parts of a block rebuild its values in float64 within the rounding of the format\'s float32 steps', () => {
    // x = d·sc·w − m·mn (k-quants), d·w + m (Q4_1, Q5_1), d·w (the rest): at most three float32
    // roundings of terms no larger than |d·sc·w| + |m·mn|, so |x − exact| ≤ 3·2⁻²⁴·(|d·sc·w| + |m·mn|) + subnormal spacing.
    const rng = new Rng(3);
    for (const f of Object.values(QUANT_FORMATS)) {
      const bytes = randomBlocks(f, 8, rng), v = dequantize(f, bytes), p = blockParts(f);
      for (let b = 0; b < 8; b++) {
        f.unpack(bytes, b * f.blockBytes, p);
        for (let i = 0; i < f.blockValues; i++) {
          const g = Math.floor(i / f.groupValues), a = p.f[0]! * p.sc[g]! * p.w[i]!;
          const m = f.blockValues === 32 ? p.f[1]! : -p.f[1]! * p.mn[g]!;
          const exact = a + m, bound = 3 * 2 ** -24 * (Math.abs(a) + Math.abs(m)) + 2 ** -149;
          expect(Math.abs(v[b * f.blockValues + i]! - exact)).toBeLessThanOrEqual(bound);
        }
      }
    }
  });
});
