// The benchmarks `run.mjs` knows about, in the order of BENCHMARKS.md. To add one, append an entry:
//   name:    short id used on the command line (`node tooling/bench/src/run.mjs <name>`); its
//            records are results/<name>.json
//   title:   the heading of its table in BENCHMARKS.md
//   script:  path from the repository root; it prints its table to stdout and accepts --write
//            (put its figures into results/<name>.json with writeRecords of @apertus/bench) and
//            --quick (a fast smoke run); null when the figures are entered with `npm run bench:record`
//   needs:   what must exist first (documentation only; `npm run bench` builds all packages)
//   about:   one line for --list
export const benchmarks = [
  {
    name: 'recipes',
    title: 'The recipes on the bundled defaults',
    script: null,
    needs: 'built apps; each figure is a recipe run on the bundled defaults (commands in the records), entered with `npm run bench:record`',
    about: 'pretraining, SFT, QRPO and evaluation figures the READMEs quote (validation loss, held-out chrF, perplexity, memorization)',
  },
  {
    name: 'before-after',
    title: 'Restructuring check: two checkouts timed in one run',
    script: 'tooling/bench/src/before-after.mjs',
    needs: 'two built checkouts (--before, --after)',
    about: 'GEMM, a tiny training step, small decode at batch 1 and 8, and a small GGUF decode step per type, one thread, alternating between the checkouts',
  },
  {
    name: 'gemm',
    title: 'GEMM: `sgemm` (WebAssembly SIMD) vs numpy + OpenBLAS',
    script: 'packages/tensor/bench/gemm.mjs',
    needs: "built @apertus/tensor; the Python peers' numpy (OpenBLAS) as the peer",
    about: 'sgemm (WebAssembly SIMD, 1 and 2 threads) vs numpy + OpenBLAS: square and Apertus-8B MLP shapes',
  },
  {
    name: 'gemm-tfjs',
    title: 'GEMM vs tfjs-backend-wasm and the SIMD peak',
    script: 'packages/tensor/bench/gemm-tfjs.mjs',
    needs: 'built @apertus/tensor; @tensorflow/tfjs-backend-wasm (devDependency of @apertus/tensor) as the peer',
    about: 'GEMM at 1024² and the small-preset shapes vs tfjs-backend-wasm (XNNPACK), and as a fraction of the measured 128-bit SIMD peak',
  },
  {
    name: 'model',
    title: 'Model speed: training step, prefill, decode vs PyTorch eager',
    script: 'packages/model/bench/speed.mjs',
    needs: "built packages; the Python peers' transformers + torch as the peer",
    about: 'training step (AdamW, AdEMAMix), prefill and decode tokens/s of tiny/small/8B-layer models vs transformers ApertusForCausalLM on PyTorch',
  },
  {
    name: 'gguf',
    title: 'GGUF inference vs llama.cpp (node-llama-cpp), one thread',
    script: 'packages/gguf/bench/speed.mjs',
    needs: 'built packages; node-llama-cpp 3.22.1 (devDependency of @apertus/gguf) as the peer',
    about: 'GGUF prefill and decode tokens/s (F32, BF16, Q8_0, Q4_K) on one thread vs llama.cpp',
  },
  {
    name: 'memory',
    title: 'Memory: peak RSS against the budget on paper',
    script: 'packages/model/bench/memory.mjs',
    needs: 'built packages',
    about: 'peak RSS of a training step and of bf16 inference against the budget on paper',
  },
  {
    name: 'pretrain',
    title: 'apertus-pretrain',
    script: 'apps/pretrain/bench/run.mjs',
    needs: "built apps/pretrain; the Python peers' transformers + torch",
    about: 'the default pretraining run end to end, its step vs transformers on PyTorch, atomic checkpoint cost',
  },
  {
    name: 'gpujs',
    title: 'gpu.js and WebGPU kernels',
    script: 'packages/tensor/bench/kernels.mjs',
    needs: 'built @apertus/tensor',
    about: 'every gpu.js kernel (webasm on CPU) vs the TypeScript kernels',
  },
  {
    name: 'tokenizer',
    title: '@apertus/tokenizer',
    script: 'packages/tokenizer/bench/encode.mjs',
    needs: 'built @apertus/tokenizer (the script prints its figures; enter them with `npm run bench:record`)',
    about: 'encode MB/s on the UDHR corpus vs @huggingface/tokenizers and the Rust bindings',
  },
  {
    name: 'serve',
    title: '@apertus/serve under load',
    script: 'packages/serve/bench/load.mjs',
    needs: 'built @apertus/serve',
    about: 'concurrent streaming load on loopback: throughput and latency percentiles',
  },
  {
    name: 'prefix-cache',
    title: 'Prefix cache',
    script: 'packages/serve/bench/prefix-cache.mjs',
    needs: 'built @apertus/serve',
    about: 'time to first token of a second chat turn (≈2,000-token history) with and without the prefix cache',
  },
  {
    name: 'gpu-budget',
    title: 'WebGPU decode budgets (counters, any adapter)',
    script: 'packages/model/bench/gpu-budget.mjs',
    needs: 'built packages; a WebGPU adapter (SwiftShader: VK_ICD_FILENAMES, set by default to Chromium\'s)',
    about: 'uploads, readbacks, dispatches and pipeline builds per decode token on webgpu (tiny, small), one JSON line per case',
  },
  {
    name: 'kv-f16',
    title: 'f16 KV cache',
    script: 'packages/model/bench/kv-f16.mjs',
    needs: 'built @apertus/model',
    about: "one decoding step's attention at a long context (small shapes) over an f32 and an f16 KV cache, alternating rounds, CPU time",
  },
  {
    name: 'prefix-cache-load',
    title: 'Prefix cache under load',
    script: 'packages/serve/bench/prefix-cache-load.mjs',
    needs: 'built @apertus/serve',
    about: 'throughput of 32 streaming chat clients for 3 minutes, prefix cache on against --no-prefix-cache, interleaved',
  },
  {
    name: 'safetensors',
    title: '@apertus/safetensors',
    script: 'packages/safetensors/bench/io.mjs',
    needs: 'built @apertus/safetensors',
    about: 'lazy reads, full reads, atomic writes and header parsing vs plain Node I/O',
  },
  {
    name: 'ademamix',
    title: '@apertus/ademamix: optimizer step',
    script: 'packages/ademamix/bench/step.mjs',
    needs: 'built @apertus/ademamix',
    about: 'optimizer step cost per million parameters',
  },
  {
    name: 'goldfish',
    title: '@apertus/goldfish: hash-table mask',
    script: 'packages/goldfish/bench/mask.mjs',
    needs: 'built @apertus/goldfish',
    about: 'Goldfish mask labels/s vs a BigInt implementation',
  },
  {
    name: 'data',
    title: '@apertus/data',
    script: 'packages/data/bench/data.bench.mjs',
    needs: 'built @apertus/data; /usr/bin/python3 with python3-protego (the script prints its figures; enter them with `npm run bench:record`)',
    about: 'robots.txt checks, PII replacement, shard writing and sample reads',
  },
  {
    name: 'sft',
    title: 'apertus-sft: the SFT step',
    script: 'apps/sft/bench/loss.mjs',
    needs: 'built packages; the model of runs/udhr-tiny when present (else a random tiny model)',
    about: "the fused LM-head loss (apertus-sft's) against forward + cross-entropy on one SFT micro-batch",
  },
];
