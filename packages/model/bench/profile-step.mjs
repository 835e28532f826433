// One training step (forward + backward inside tidy, AdEMAMix, zeroGrad as the trainer does) of a
// preset, repeated, for CPU
// profiles: the first step warms up, the rest are what to read.
//
//   node --cpu-prof --cpu-prof-dir=/tmp/prof packages/model/bench/profile-step.mjs tiny 8 256 3 [threads]
//   node --cpu-prof --cpu-prof-dir=/tmp/prof packages/model/bench/profile-step.mjs small 1 256 2 [threads]
//
// (arguments: preset, B, T, steps after the warm-up, GEMM threads — default 2; each step's wall and
// process CPU time is printed). Open the
// .cpuprofile in Chrome DevTools or summarise its self times by function. Needs built packages.
import { AdEMAMix } from '@apertus/ademamix';
import { ApertusModel, presetConfig } from '@apertus/model';
import { backward, Rng, Tensor, tidy, setGemmThreads } from '@apertus/tensor';
const [name, B, T, steps, threads] = [process.argv[2] ?? 'tiny', +(process.argv[3] ?? 8), +(process.argv[4] ?? 256), +(process.argv[5] ?? 3), +(process.argv[6] ?? 2)];
setGemmThreads(threads);
const config = presetConfig(name);
const m = ApertusModel.init(config, 0);
const rng = new Rng(1);
const ids = () => Tensor.ints(Array.from({ length: B * T }, () => rng.int(config.vocab_size)), [B, T]);
const opt = new AdEMAMix(m.parameters(), { lr: 1e-3 });
const x = ids(), y = ids();
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
for (let i = 0; i <= steps; i++) {
  const t0 = performance.now(), c0 = cpu();
  tidy(() => backward(m.loss(x, y))); opt.step();
  opt.zeroGrad();
  console.log(name, i, (performance.now() - t0).toFixed(0), 'ms wall', (cpu() - c0).toFixed(0), 'ms CPU');
}
