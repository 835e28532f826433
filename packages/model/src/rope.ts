import type { ApertusConfig } from './config';

/**
 * RoPE inverse frequencies with llama3 scaling, computed in float32 as Hugging Face does
 * (`_compute_llama3_parameters`, spec §4.1):
 * inv[i] = 1/θ^(2i/d); wavelengths longer than old/low are divided by `factor`, shorter than
 * old/high kept, and the band between is interpolated with s = (old/wavelen − low)/(high − low).
 */
export function ropeInvFreq(c: Pick<ApertusConfig, 'head_dim' | 'rope_theta' | 'rope_scaling'>): Float32Array {
  const d = c.head_dim, f = Math.fround;
  const inv = new Float32Array(d / 2);
  for (let i = 0; i < d / 2; i++) inv[i] = f(1 / f(c.rope_theta ** f((2 * i) / d)));
  const s = c.rope_scaling;
  if (!s || s.rope_type !== 'llama3') return inv;
  const lowWavelen = s.original_max_position_embeddings / s.low_freq_factor;
  const highWavelen = s.original_max_position_embeddings / s.high_freq_factor;
  for (let i = 0; i < d / 2; i++) {
    const wavelen = f((2 * Math.PI) / inv[i]!);
    const base = wavelen > lowWavelen ? f(inv[i]! / s.factor) : inv[i]!;
    const smoothFactor = f((s.original_max_position_embeddings / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor));
    const smoothed = f(f(((1 - smoothFactor) * base) / s.factor) + f(smoothFactor * base));
    const medium = !(wavelen < highWavelen) && !(wavelen > lowWavelen);
    inv[i] = medium ? smoothed : base;
  }
  return inv;
}
