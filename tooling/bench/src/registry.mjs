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
    needs: 'built @apertus/tensor; /usr/bin/python3 with numpy (OpenBLAS) as the peer',
    about: 'sgemm (WebAssembly SIMD, 1 and 2 threads) vs numpy + OpenBLAS: square and Apertus-8B MLP shapes',
  },
];
