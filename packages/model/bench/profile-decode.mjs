// Decode steps of a preset at batch B (each sequence prefilled with T tokens, then one new token
// per sequence per step), for CPU profiles of what bounds decode at batch 1 and batch 8.
//
//   node --cpu-prof --cpu-prof-dir=/tmp/prof packages/model/bench/profile-decode.mjs small 8 64 32 [threads]
//
// (arguments: preset, B, T, decode steps, GEMM threads — default 1). Prints the median ms per
// step and tokens/s of process CPU time. Open the .cpuprofile in Chrome DevTools, or split it by
// what the steps spend their time on with profile-split.mjs (the prefill left out). Needs built packages.
import { ApertusModel, KVCache, presetConfig, step } from '@apertus/model';
import { Rng, setGemmThreads } from '@apertus/tensor';

const [name, B, T, steps, threads] = [process.argv[2] ?? 'small', +(process.argv[3] ?? 8), +(process.argv[4] ?? 64), +(process.argv[5] ?? 32), +(process.argv[6] ?? 1)];
setGemmThreads(threads);
const config = presetConfig(name);
const m = ApertusModel.init(config, 0);
const rng = new Rng(1);
const caches = Array.from({ length: B }, () => new KVCache(config, T + steps + 1));
step(m, caches.map((cache) => ({ cache, tokens: Array.from({ length: T }, () => rng.int(config.vocab_size)) })));
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
/** The decode steps (a named frame: the profile below it leaves the prefill out). */
function decodeSteps() {
  const times = [], logits = new Float32Array(B * config.vocab_size);
  for (let i = 0; i < steps; i++) {
    const t0 = cpu();
    step(m, caches.map((cache) => ({ cache, tokens: [rng.int(config.vocab_size)] })), logits);
    times.push(cpu() - t0);
  }
  return times;
}
const times = decodeSteps();
times.sort((a, b) => a - b);
const med = times[times.length >> 1];
console.log(`${name} B=${B} T=${T}: ${med.toFixed(1)} ms CPU per step, ${(1000 * B / med).toFixed(1)} tokens/s of CPU time`);
process.exit(0);
