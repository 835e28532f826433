import type { F32, I32 } from '../../arrays';

export function crossEntropy(logits: F32, targets: I32, weights: F32 | null, rows: number, V: number, loss: F32, lse: F32): void {
  for (let r = 0; r < rows; r++) {
    const o = r * V;
    let m = -Infinity;
    for (let j = 0; j < V; j++) if (logits[o + j]! > m) m = logits[o + j]!;
    let s = 0;
    for (let j = 0; j < V; j++) s += Math.exp(logits[o + j]! - m);
    const L = m + Math.log(s);
    lse[r] = L;
    const t = targets[r]!;
    const w = weights === null ? 1 : weights[r]!;
    loss[r] = t < 0 || w === 0 ? 0 : w * (L - logits[o + t]!);
  }
}

export function crossEntropyBackward(logits: F32, targets: I32, weights: F32 | null, lse: F32, g: F32, rows: number, V: number, glogits: F32): void {
  for (let r = 0; r < rows; r++) {
    const o = r * V;
    const t = targets[r]!;
    const w = t < 0 ? 0 : (weights === null ? 1 : weights[r]!) * g[r]!;
    if (w === 0) { glogits.fill(0, o, o + V); continue; }
    const L = lse[r]!;
    for (let j = 0; j < V; j++) glogits[o + j] = w * Math.exp(logits[o + j]! - L);
    glogits[o + t]! -= w;
  }
}
