// The 128-bit WebAssembly SIMD peak of one core, measured: a loop of 12 independent
// accumulator chains `acc = acc * m + a` on f32x4 (enough chains to cover the multiply and add
// latencies on x86-64), once with separate f32x4.mul + f32x4.add and once with
// f32x4.relaxed_madd (one fused multiply-add where the CPU has FMA). 8 flops per f32x4 step.
//
//   node packages/tensor/bench/simd-peak.mjs        (prints GFLOPS of both, one thread)
//
// gemm.mjs imports `simdPeak()` to state the GEMM as a fraction of the peak.
import v8 from 'node:v8';

const CHAINS = 12;

function uleb(n) {
  const out = [];
  do { let b = n & 0x7f; n >>>= 7; if (n) b |= 0x80; out.push(b); } while (n);
  return out;
}

/** Module bytes: export `run(iterations: i32) -> f32`. */
function probeModule(fused) {
  const simd = (op) => [0xfd, ...uleb(op)];
  const get = (i) => [0x20, ...uleb(i)];
  const set = (i) => [0x21, ...uleb(i)];
  const f32x4Splat = (v) => [0x43, ...new Uint8Array(new Float32Array([v]).buffer), ...simd(0x13)];
  const M = 1 + CHAINS, A = M + 1; // locals: 0 = iterations, 1..CHAINS = accumulators, M, A
  const body = [
    ...f32x4Splat(0.999999), ...set(M), ...f32x4Splat(1e-6), ...set(A),
    ...Array.from({ length: CHAINS }, (_, i) => [...f32x4Splat(1 + i / 64), ...set(1 + i)]).flat(),
    0x03, 0x40, // loop
    ...Array.from({ length: CHAINS }, (_, i) => fused
      ? [...get(1 + i), ...get(M), ...get(A), ...simd(0x105), ...set(1 + i)]
      : [...get(1 + i), ...get(M), ...simd(0xe6), ...get(A), ...simd(0xe4), ...set(1 + i)]).flat(),
    ...get(0), 0x41, 1, 0x6b, 0x22, 0, // iterations = iterations - 1 (tee)
    0x0d, 0, // br_if 0
    0x0b, // end loop
    ...get(1), ...Array.from({ length: CHAINS - 1 }, (_, i) => [...get(2 + i), ...simd(0xe4)]).flat(),
    ...simd(0x1f), 0, // f32x4.extract_lane 0
  ];
  const fn = [...uleb(1), ...uleb(CHAINS + 2), 0x7b, ...body, 0x0b];
  const section = (id, bytes) => [id, ...uleb(bytes.length), ...bytes];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [1, 0x60, 1, 0x7f, 1, 0x7d]),
    ...section(3, [1, 0]),
    ...section(7, [1, 3, ...Buffer.from('run'), 0x00, 0]),
    ...section(10, [1, ...uleb(fn.length), ...fn]),
  ]);
}

/** Best GFLOPS of the probe over `seconds` (null where the runtime rejects the module). */
function measure(fused, seconds, cpu) {
  const bytes = probeModule(fused);
  if (!WebAssembly.validate(bytes)) return null;
  const { run } = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports;
  const iters = 2_000_000;
  run(iters);
  let best = 0;
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const t0 = performance.now(), c0 = process.cpuUsage();
    run(iters);
    const c = process.cpuUsage(c0);
    const dt = cpu ? (c.user + c.system) / 1e6 : (performance.now() - t0) / 1000;
    best = Math.max(best, (iters * CHAINS * 8) / dt / 1e9);
  }
  return best;
}

/**
 * One-thread 128-bit SIMD peak in GFLOPS: `mulAdd` (f32x4.mul + f32x4.add) and `fma` (relaxed_madd,
 * null if unavailable); by wall-clock time, or with `cpu` by the process's CPU time.
 */
export function simdPeak(seconds = 0.5, cpu = false) {
  v8.setFlagsFromString('--experimental-wasm-relaxed-simd');
  return { mulAdd: measure(false, seconds, cpu), fma: measure(true, seconds, cpu) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const p = simdPeak(1);
  console.log(`128-bit SIMD peak, one thread: mul+add ${p.mulAdd.toFixed(1)} GFLOPS, relaxed_madd ${p.fma === null ? 'n/a' : p.fma.toFixed(1)} GFLOPS`);
}
