import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gemmKernelInfo, gemmThreads, setGemmThreads, setGemmVariant } from '@apertus/tensor';
import { afterAll, expect, it } from 'vitest';
import { resolvePretrainConfig } from './config';
import { runPretraining } from './pretrain';

/**
 * The first steps of a small pretraining run, pinned bit for bit: the per-step training losses
 * must equal the committed golden exactly, with 1 and with 2 GEMM threads. Nothing in the
 * numerics may depend on the CPU (no cache-size-dependent blocking, no feature-dependent kernel
 * choice, no thread-count-dependent summation order), so the golden holds on any x86-64 CPU.
 * That needs the plain-SIMD GEMM (`setGemmVariant('simd')`, mul + add): the default FMA variant
 * (`relaxed_madd`) is fused only on CPUs with FMA, so its bits are not the same everywhere.
 *
 * Generator: `APERTUS_WRITE_GOLDEN=1 npx vitest run --project recipes src/pretrain/reproducible.test.ts`
 * rewrites test/golden/first-steps.json from a 1-thread run (and the test then checks both
 * thread counts against it).
 */
const GOLDEN = path.join(__dirname, '../../test/golden/first-steps.json');
const STEPS = 6;
const threadsBefore = gemmThreads();
const variantBefore = gemmKernelInfo().variant!;
setGemmVariant('simd');
afterAll(() => {
  setGemmThreads(threadsBefore);
  setGemmVariant(variantBefore);
});

async function firstLosses(threads: number): Promise<number[]> {
  setGemmThreads(threads);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-golden-'));
  try {
    const cfg = resolvePretrainConfig([{
      source: 'test',
      values: {
        out: path.join(dir, 'run'), languages: ['eng', 'fra'], vocabSize: 1400,
        model: { hidden_size: 48, intermediate_size: 96, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2 },
        seqLength: 48, microBatchSize: 4, steps: STEPS, lr: 5e-3, evalInterval: STEPS, evalSamples: 8, sampleTokens: 4,
        checkpointInterval: 100, keepCheckpoints: 1, progress: 'off',
      },
    }]).config;
    const run = await runPretraining(cfg, { log: () => {} });
    return run.metrics.filter((m) => m.type === 'train').map((m) => m.loss as number);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

it('the first training losses equal the golden bit for bit, with 1 and 2 GEMM threads', async () => {
  const one = await firstLosses(1);
  if (process.env.APERTUS_WRITE_GOLDEN === '1') {
    fs.mkdirSync(path.dirname(GOLDEN), { recursive: true });
    fs.writeFileSync(GOLDEN, `${JSON.stringify({ steps: STEPS, gemmVariant: gemmKernelInfo().variant, losses: one }, null, 2)}\n`);
  }
  const golden = JSON.parse(fs.readFileSync(GOLDEN, 'utf8')) as { losses: number[]; gemmVariant: string };
  expect(gemmKernelInfo().variant).toBe(golden.gemmVariant);
  expect(one).toHaveLength(STEPS);
  expect(one).toEqual(golden.losses);
  expect(await firstLosses(2)).toEqual(golden.losses);
}, 600_000);
