// The machine and load a figure was taken on, read in one place: `lscpu`'s model, family and model
// number, CPU count and SIMD flags (what the speed ratios depend on), and the load average.
import { execFileSync } from 'node:child_process';
import os from 'node:os';

/** The flags that the speed ratios depend on: x86 SIMD widths and extensions (128-bit WebAssembly SIMD against AVX2 or AVX-512). */
const SIMD_FLAG = /^(sse4_2|avx|avx2|fma|f16c|avx512.*|avx_vnni|amx.*)$/;

function lscpu() {
  try {
    return execFileSync('lscpu', { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return null;
  }
}

const field = (out, k) => new RegExp(`^${k}:\\s*(.*)$`, 'm').exec(out)?.[1]?.trim() ?? '?';

/**
 * `lscpu`'s model name, family and model, logical CPUs and SIMD flags, e.g.
 * `AMD EPYC 9R14 (family 25, model 17; 2 CPUs); flags: avx avx2 fma ...`; where `lscpu` is
 * missing, Node's model name and CPU count.
 */
export function cpuDescription() {
  const out = lscpu();
  if (out === null) return `${os.cpus()[0]?.model ?? 'unknown CPU'} (${os.cpus().length} CPUs; lscpu unavailable)`;
  const flags = field(out, 'Flags').split(/\s+/).filter((f) => SIMD_FLAG.test(f));
  return `${machineDescription()}; flags: ${flags.join(' ')}`;
}

/** The machine column of a record: `lscpu`'s model name, family and model, and CPU count (no flags). */
export function machineDescription() {
  const out = lscpu();
  if (out === null) return `${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.cpus().length} CPUs`;
  return `${field(out, 'Model name')} (family ${field(out, 'CPU family')}, model ${field(out, 'Model')}), ${field(out, 'CPU\\(s\\)')} CPUs`;
}

/** The 1-minute load average, one decimal. */
export function loadAverage() {
  return os.loadavg()[0].toFixed(1);
}

/** The load column of a record from the load averages at the start and the end of a run: `1.2` or `1.2–3.4`. */
export function loadRange(start, end = Number(loadAverage())) {
  const [a, b] = [Number(start), Number(end)].sort((x, y) => x - y).map((x) => x.toFixed(1));
  return a === b ? a : `${a}–${b}`;
}
