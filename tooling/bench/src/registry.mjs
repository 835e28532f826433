// The benchmarks `run.mjs` knows about. To add one, append an entry:
//   name:    short id used on the command line (`node tooling/bench/src/run.mjs <name>`)
//   script:  path from the repository root; it must print its table to stdout and accept --write
//            (write tooling/bench/results/<result>) and --quick (a fast smoke run)
//   result:  the results file the script writes with --write
//   needs:   what must exist first (documentation only; `npm run bench` builds all packages)
//   about:   one line for --list
export const benchmarks = [
  {
    name: 'gemm',
    script: 'packages/tensor/bench/gemm.mjs',
    result: 'gemm.md',
    needs: 'built @apertus/tensor; the Python peers' numpy (OpenBLAS) as the peer',
    about: 'sgemm (WebAssembly SIMD, 1 and 2 threads) vs numpy + OpenBLAS: square and Apertus-8B MLP shapes',
  },
  {
    name: 'gemm-tfjs',
    script: 'packages/tensor/bench/gemm-tfjs.mjs',
    result: 'gemm-tfjs.md',
    needs: 'built @apertus/tensor; @tensorflow/tfjs-backend-wasm (devDependency of @apertus/tensor) as the peer',
    about: 'GEMM at 1024² and the small-preset shapes vs tfjs-backend-wasm (XNNPACK), and as a fraction of the measured 128-bit SIMD peak',
  },
  {
    name: 'model',
    script: 'packages/model/bench/speed.mjs',
    result: 'model.md',
    needs: 'built packages; the Python peers' transformers + torch as the peer',
    about: 'training step (AdamW, AdEMAMix), prefill and decode tokens/s of tiny/small/8B-layer models vs transformers ApertusForCausalLM on PyTorch',
  },
  {
    name: 'gguf',
    script: 'packages/gguf/bench/speed.mjs',
    result: 'gguf.md',
    needs: 'built packages; node-llama-cpp 3.22.1 (devDependency of @apertus/gguf) as the peer',
    about: 'GGUF prefill and decode tokens/s (F32, BF16, Q8_0, Q4_K) on one thread vs llama.cpp',
  },
  {
    name: 'memory',
    script: 'packages/model/bench/memory.mjs',
    result: 'memory.md',
    needs: 'built packages',
    about: 'peak RSS of a training step and of bf16 inference against the budget on paper',
  },
  {
    name: 'pretrain',
    script: 'apps/pretrain/bench/run.mjs',
    result: 'pretrain.md',
    needs: 'built apps/pretrain; the Python peers' transformers + torch',
    about: 'the default pretraining run end to end, its step vs transformers on PyTorch, atomic checkpoint cost',
  },
  {
    name: 'gpujs',
    script: 'packages/tensor/bench/kernels.mjs',
    result: 'gpujs.md',
    needs: 'built @apertus/tensor',
    about: 'every gpu.js kernel (webasm on CPU) vs the TypeScript kernels',
  },
  {
    name: 'tokenizer',
    script: 'packages/tokenizer/bench/encode.mjs',
    result: 'tokenizer.md',
    needs: 'built @apertus/tokenizer (results are copied into results/tokenizer.md by hand: the script prints them)',
    about: 'encode MB/s on the UDHR corpus vs @huggingface/tokenizers and the Rust bindings',
  },
  {
    name: 'serve',
    script: 'packages/serve/bench/load.mjs',
    result: 'serve.md',
    needs: 'built @apertus/serve',
    about: 'concurrent streaming load on loopback: throughput and latency percentiles',
  },
  {
    name: 'prefix-cache',
    script: 'packages/serve/bench/prefix-cache.mjs',
    result: 'prefix-cache.md',
    needs: 'built @apertus/serve',
    about: 'time to first token of a second chat turn (≈2,000-token history) with and without the prefix cache',
  },
  {
    name: 'safetensors',
    script: 'packages/safetensors/bench/io.mjs',
    result: 'safetensors.md',
    needs: 'built @apertus/safetensors',
    about: 'lazy reads, full reads, atomic writes and header parsing vs plain Node I/O',
  },
  {
    name: 'ademamix',
    script: 'packages/ademamix/bench/step.mjs',
    result: 'ademamix.md',
    needs: 'built @apertus/ademamix',
    about: 'optimizer step cost per million parameters',
  },
  {
    name: 'goldfish',
    script: 'packages/goldfish/bench/mask.mjs',
    result: 'goldfish.md',
    needs: 'built @apertus/goldfish',
    about: 'Goldfish mask labels/s vs a BigInt implementation',
  },
  {
    name: 'data',
    script: 'packages/data/bench/data.bench.mjs',
    result: 'data.md',
    needs: 'built @apertus/data; /usr/bin/python3 with python3-protego (results copied by hand)',
    about: 'robots.txt checks, PII replacement, shard writing and sample reads',
  },
];
