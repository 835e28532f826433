// The x·Wᵀ products of one decode step (every linear layer of a preset and the LM head, B new
// tokens, float32 weights: for `small` 400 MB, so W streams from memory) on our cpu GEMM and on
// PyTorch's F.linear, interleaved round by round so both see the same machine load. This is the
// part of a batched decode step that the skinny GEMM path (`dot_nt`) owns; `speed.mjs` times the
// whole step.
//
//   node packages/model/bench/decode-linears.mjs [preset=small] [B=8] [--rounds R] [--cpu-time]
//
// Wall clock at 1 and 2 threads on each side (best kept), or with --cpu-time each process's CPU
// seconds at 1 thread (for a machine loaded by other jobs). Per round: ours, then PyTorch, each
// the best of 3 steps after a warm-up step. Prints the lscpu model and flags, the load average
// and the ratio PyTorch time / our time. Needs built packages and the Python peers (`npm run peers`).
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { presetConfig } from '@apertus/model';
import { gemmKernelInfo, Rng, setGemmThreads, sgemm, Tensor, tidy } from '@apertus/tensor';
import { cpuDescription } from '@apertus/bench';

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const opt = (name, dflt) => (argv.indexOf(name) >= 0 ? Number(argv[argv.indexOf(name) + 1]) : dflt);
const positional = argv.filter((a, i) => !a.startsWith('--') && !(i > 0 && argv[i - 1] === '--rounds'));
const preset = positional[0] ?? 'small';
const B = Number(positional[1] ?? 8);
const rounds = opt('--rounds', 3);
const cpuTime = flag('--cpu-time');
const THREADS = cpuTime ? [1] : [1, 2];

const c = presetConfig(preset);
const H = c.hidden_size, hd = c.head_dim;
/** [N, K] of every product of one step, in the model's order. */
const shapes = [];
for (let l = 0; l < c.num_hidden_layers; l++) {
  shapes.push([c.num_attention_heads * hd, H], [c.num_key_value_heads * hd, H], [c.num_key_value_heads * hd, H]);
  shapes.push([H, c.num_attention_heads * hd], [c.intermediate_size, H], [H, c.intermediate_size]);
}
shapes.push([c.vocab_size, H]);

const now = () => { if (!cpuTime) return performance.now(); const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const rng = new Rng(0);
// Allocated inside a scope (as the model's parameters are), so that all 403 MB live on the cpu
// device's heap and the GEMM reads them in place: outside a scope, storage past the heap's soft
// limit (256 MB) falls back to plain arrays, which every product would stage (copy) first.
const mats = tidy(() => shapes.map(([N, K]) => ({ N, K, W: Tensor.randn([N, K], rng, 0.02), x: Tensor.randn([B, K], rng), y: Tensor.zeros([B, N]) })));
/** Milliseconds of one step's products on our side. */
function oursStep() {
  const t0 = now();
  for (const { N, K, W, x, y } of mats) sgemm({ transA: false, transB: true, M: B, N, K, A: x.data, B: W.data, C: y.data });
  return now() - t0;
}
function ours(threads) {
  setGemmThreads(threads);
  oursStep();
  return Math.min(oursStep(), oursStep(), oursStep());
}

const PEER = `
import json, sys, time, torch
import { peerPython } from '@apertus/peers';
a = json.loads(sys.argv[1])
torch.set_num_threads(a["threads"]); torch.manual_seed(0)
mats = [(torch.randn(n, k) * 0.02, torch.randn(a["B"], k)) for n, k in a["shapes"]]
clock = time.process_time if a["cpu"] else time.perf_counter
def step():
    t0 = clock()
    with torch.no_grad():
        for w, x in mats: torch.nn.functional.linear(x, w)
    return (clock() - t0) * 1000
step()
print(json.dumps({"ms": min(step(), step(), step()), "torch": torch.__version__}))
`;
function torch(threads) {
  const env = { ...process.env, OPENBLAS_NUM_THREADS: String(threads), OMP_NUM_THREADS: String(threads) };
  const out = execFileSync(peerPython(), ['-c', PEER, JSON.stringify({ threads, B, shapes, cpu: cpuTime })], { encoding: 'utf8', env });
  return JSON.parse(out.trim().split('\n').pop());
}

const flops = 2 * B * shapes.reduce((s, [N, K]) => s + N * K, 0);
const weightsMB = (4 * shapes.reduce((s, [N, K]) => s + N * K, 0)) / 1e6;
console.log(`CPU: ${cpuDescription()}; Node ${process.version}; load average ${os.loadavg()[0].toFixed(1)}; ${cpuTime ? 'process CPU time, 1 thread' : 'wall clock, best of 1 and 2 threads'}`);
console.log(`${preset} decode x·Wᵀ, B = ${B}: ${shapes.length} products, ${weightsMB.toFixed(0)} MB of f32 weights, ${(flops / 1e9).toFixed(2)} GFLOP per step`);
const best = { ours: new Map(), torch: new Map() };
let version = '?';
for (let r = 0; r < rounds; r++) {
  for (const t of THREADS) {
    const o = ours(t);
    const p = torch(t);
    version = p.torch;
    best.ours.set(t, Math.min(best.ours.get(t) ?? Infinity, o));
    best.torch.set(t, Math.min(best.torch.get(t) ?? Infinity, p.ms));
    console.log(`round ${r + 1}, ${t} thread${t > 1 ? 's' : ''}: ours ${o.toFixed(1)} ms, torch ${p.ms.toFixed(1)} ms (load ${os.loadavg()[0].toFixed(1)})`);
  }
}
const pick = (m) => [...m].reduce((a, b) => (b[1] < a[1] ? b : a));
const [ot, oms] = pick(best.ours), [pt, pms] = pick(best.torch);
if (gemmKernelInfo().bytesStaged > 1e6) console.log(`warning: ${(gemmKernelInfo().bytesStaged / 1e6).toFixed(0)} MB of operands were staged (not on the heap)`);
console.log(`best: ours ${oms.toFixed(1)} ms (${ot} thread${ot > 1 ? 's' : ''}, ${(flops / oms / 1e6).toFixed(1)} GFLOPS), PyTorch ${version} ${pms.toFixed(1)} ms (${pt} thread${pt > 1 ? 's' : ''}); ratio PyTorch / ours ${(pms / oms).toFixed(2)}`);
process.exit(0);
