import { AdEMAMix, AdamW } from '@apertus/ademamix';
import { ApertusModel, presetConfig } from '@apertus/model';
import { backward, Rng, Tensor, tidy, setGemmThreads } from '@apertus/tensor';
setGemmThreads(1);
const config = presetConfig(process.argv[2] ?? 'small');
const m = ApertusModel.init(config, 0);
const rng = new Rng(1);
const ids = () => Tensor.ints(Array.from({ length: 64 }, () => rng.int(config.vocab_size)), [1, 64]);
const x = ids(), y = ids();
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
for (const [name, opt] of [['AdEMAMix', new AdEMAMix(m.parameters(), { lr: 1e-3 })]]) {
  for (let i = 0; i < 8; i++) {
    tidy(() => backward(m.loss(x, y)));
    const t0 = cpu(); opt.step(); const dt = cpu() - t0;
    opt.zeroGrad();
    console.log(name, i, dt.toFixed(0), 'ms CPU');
  }
}
