import { ApertusModel, KVCache, presetConfig, step } from '@apertus/model';
import { Rng, setGemmThreads } from '@apertus/tensor';
const [name, T, n] = [process.argv[2] ?? 'tiny', +(process.argv[3] ?? 256), +(process.argv[4] ?? 20)];
setGemmThreads(1);
const config = presetConfig(name);
const m = ApertusModel.init(config, 0);
const rng = new Rng(1);
const toks = Array.from({ length: T }, () => rng.int(config.vocab_size));
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
for (let i = 0; i < n; i++) { const t0 = cpu(); step(m, [{ cache: new KVCache(config, T), tokens: toks }]); if (i % 5 === 0) console.log(i, (cpu() - t0).toFixed(1), 'ms'); }
