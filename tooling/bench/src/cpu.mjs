// The CPU every benchmark prints with its figures, read from `lscpu` in one place. Bench scripts
// of every package import it by relative path (`../../../tooling/bench/src/cpu.mjs`), as they
// write their results under ../../../tooling/bench/results.
import { execFileSync } from 'node:child_process';
import os from 'node:os';

/** The flags that the speed ratios depend on: x86 SIMD widths and extensions (128-bit WebAssembly SIMD against AVX2 or AVX-512). */
const SIMD_FLAG = /^(sse4_2|avx|avx2|fma|f16c|avx512.*|avx_vnni|amx.*)$/;

/**
 * `lscpu`'s model name, family and model, logical CPUs and SIMD flags, e.g.
 * `AMD EPYC 9R14 (family 25, model 17; 2 CPUs); flags: avx avx2 fma ...`; where `lscpu` is
 * missing, Node's model name and CPU count.
 */
export function cpuDescription() {
  let out;
  try {
    out = execFileSync('lscpu', { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return `${os.cpus()[0]?.model ?? 'unknown CPU'} (${os.cpus().length} CPUs; lscpu unavailable)`;
  }
  const field = (k) => new RegExp(`^${k}:\\s*(.*)$`, 'm').exec(out)?.[1]?.trim() ?? '?';
  const flags = field('Flags').split(/\s+/).filter((f) => SIMD_FLAG.test(f));
  return `${field('Model name')} (family ${field('CPU family')}, model ${field('Model')}; ${field('CPU\\(s\\)')} CPUs); flags: ${flags.join(' ')}`;
}
