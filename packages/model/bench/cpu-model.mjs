// lscpu's model name and SIMD flags, printed with every speed figure of this folder's benchmarks.
import { execFileSync } from 'node:child_process';
import os from 'node:os';

/** lscpu's model name and flags (the ratios depend on them: 128-bit WebAssembly SIMD against AVX2 or AVX-512). */
export function cpuModel() {
  try {
    const out = execFileSync('lscpu', { encoding: 'utf8' });
    const field = (k) => (out.match(new RegExp(`^${k}:\\s*(.*)$`, 'm')) ?? [])[1]?.trim() ?? '?';
    const flags = field('Flags').split(/\s+/).filter((f) => /^(avx|avx2|fma|avx512f|avx512_bf16|avx_vnni)$/.test(f));
    return `${field('Model name')} (${field('CPU\\(s\\)')} CPUs; ${flags.join(' ')})`;
  } catch {
    return os.cpus()[0]?.model ?? '?';
  }
}
