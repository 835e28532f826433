import fs from 'node:fs';
import { backward, crossEntropy, Tensor } from '@apertus/tensor';
import { describe, expect, test } from 'vitest';
import { step } from './infer';
import { KVCache } from './kv-cache';
import { ApertusModel } from './model';
import { PARITY_VARIANTS, parityInputs, runReference, type RefOut } from '../test/parity-fixture';

/**
 * Parity with an independent PyTorch float64 implementation written from the spec
 * (`test/reference.py`), for the Apertus model (xIELU MLP) and its SwiGLU ablation twin. The
 * golden files hold that script's output for the seeded models below, produced by
 * `src/golden.gen.test.ts`; the reference also runs on the Python peers
 * live on the same inputs (`npm run peers`).
 */
type Variant = (typeof PARITY_VARIANTS)[number];

function runOurs(v: Variant, packed: boolean) {
  const model = ApertusModel.init(v.config, 1234);
  const inp = parityInputs(packed);
  const B = inp.ids.length, T = inp.ids[0]!.length;
  const logits = model.forward(Tensor.ints(inp.ids.flat(), [B, T]), {
    positions: Tensor.ints(inp.positions.flat(), [B, T]),
    ...(inp.doc_ids ? { docIds: Tensor.ints(inp.doc_ids.flat(), [B, T]) } : {}),
  });
  const loss = crossEntropy(logits, Tensor.ints(inp.targets.flat(), [B, T]));
  backward(loss);
  return { model, inp, logits: logits.data, loss: loss.item() };
}

/** max |a − b| / max |b|. */
function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0, den = 0;
  for (let i = 0; i < b.length; i++) { num = Math.max(num, Math.abs(a[i]! - b[i]!)); den = Math.max(den, Math.abs(b[i]!)); }
  return num / den;
}

function compare(v: Variant, ours: ReturnType<typeof runOurs>, ref: RefOut): void {
  expect(relErr(ours.logits, ref.logits)).toBeLessThanOrEqual(1e-4);
  expect(Math.abs(ours.loss - ref.loss) / ref.loss).toBeLessThanOrEqual(1e-5);
  for (const name of v.grads) {
    const g = ours.model.params.get(name)!.grad!.data;
    const e = relErr(g, ref.grads[name]!);
    if (!(e <= 1e-4)) expect.fail(`gradient of ${name}: relative error ${e}`);
  }
}


for (const v of PARITY_VARIANTS) {
  describe(`parity with the PyTorch reference (${v.name} MLP)`, () => {
    const golden = JSON.parse(fs.readFileSync(v.golden, 'utf8')) as Record<'plain' | 'packed', RefOut>;

    test('the fused loss (model.loss) gives the golden loss and gradients too', () => {
      const model = ApertusModel.init(v.config, 1234);
      const inp = parityInputs(true);
      const ref = golden.packed;
      const B = inp.ids.length, T = inp.ids[0]!.length;
      const loss = model.loss(Tensor.ints(inp.ids.flat(), [B, T]), Tensor.ints(inp.targets.flat(), [B, T]), {
        positions: Tensor.ints(inp.positions.flat(), [B, T]), docIds: Tensor.ints(inp.doc_ids!.flat(), [B, T]),
      });
      backward(loss);
      expect(Math.abs(loss.item() - ref.loss) / ref.loss).toBeLessThanOrEqual(1e-5);
      for (const name of v.grads) expect(relErr(model.params.get(name)!.grad!.data, ref.grads[name]!)).toBeLessThanOrEqual(1e-4);
    });

    for (const mode of ['plain', 'packed'] as const) {
      test(`${mode}: logits, loss and gradients match the committed golden (≤ 1e-4 relative)`, () => {
        compare(v, runOurs(v, mode === 'packed'), golden[mode]);
      });
    }

    test('KV-cache inference (step) runs the same layer: it reproduces the golden logits', () => {
      // In the packed golden every document starts at position 0 and attends only to itself, so
      // its logits are those of the document alone: row 0 holds three 4-token documents, row 1 one
      // 12-token document.
      const model = ApertusModel.init(v.config, 1234);
      const ref = golden.packed, V = v.config.vocab_size, T = 12, ids = parityInputs(true).ids;
      const refRow = (b: number, t: number) => ref.logits.slice((b * T + t) * V, (b * T + t + 1) * V);
      // The three documents of row 0 as one batch of prefills, with a one-token prefill of row 1 beside them.
      const caches = [0, 1, 2].map(() => new KVCache(v.config, 16)), row1 = new KVCache(v.config, 16);
      const pre = step(model, [...caches.map((cache, j) => ({ cache, tokens: ids[0]!.slice(4 * j, 4 * j + 4) })), { cache: row1, tokens: [ids[1]![0]!] }]);
      for (let j = 0; j < 3; j++) expect(relErr(pre.subarray(j * V, (j + 1) * V), refRow(0, 4 * j + 3))).toBeLessThanOrEqual(1e-4);
      expect(relErr(pre.subarray(3 * V), refRow(1, 0))).toBeLessThanOrEqual(1e-4);
      // Row 1: a chunk of four, then token by token.
      expect(relErr(step(model, [{ cache: row1, tokens: ids[1]!.slice(1, 5) }]), refRow(1, 4))).toBeLessThanOrEqual(1e-4);
      for (let t = 5; t < T; t++) expect(relErr(step(model, [{ cache: row1, tokens: [ids[1]![t]!] }]), refRow(1, t))).toBeLessThanOrEqual(1e-4);
    });

    test('live: the same inputs through reference.py agree', () => {
      for (const packed of [false, true]) {
        const ours = runOurs(v, packed);
        compare(v, ours, runReference(ours.model, ours.inp));
      }
    });
  });
}
