import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { expect, it } from 'vitest';

// The worker threads must never keep a process alive, and the inline worker source must work
// from a bundle (the way tsup ships the package), not just from vitest's module loader.
it('a bundled script that used the threaded GEMM exits on its own', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'apertus-gemm-'));
  try {
    const entry = join(dir, 'entry.ts');
    writeFileSync(entry, `
      import { sgemm } from ${JSON.stringify(join(__dirname, 'index.ts'))};
      import { kernelInfo } from ${JSON.stringify(join(__dirname, '../../registry.ts'))};
      import { gemmKernelInfo, setGemmThreads } from ${JSON.stringify(join(__dirname, 'cpu.ts'))};
      setGemmThreads(2);
      const n = 160, A = new Float32Array(n * n).fill(1), B = new Float32Array(n * n).fill(2), C = new Float32Array(n * n);
      sgemm({ transA: false, transB: false, M: n, N: n, K: n, A, B, C });
      console.log(JSON.stringify({ impl: kernelInfo('gemm').impl, workers: gemmKernelInfo().workers, c0: C[0], cLast: C[n * n - 1] }));
    `);
    for (const format of ['esm', 'cjs'] as const) {
      const outfile = join(dir, `out.${format === 'esm' ? 'mjs' : 'cjs'}`);
      await build({ entryPoints: [entry], bundle: true, platform: 'node', format, outfile, logLevel: 'silent' });
      const t0 = Date.now();
      const r = spawnSync(process.execPath, [outfile], { encoding: 'utf8', timeout: 20_000 });
      expect(r.error).toBeUndefined();
      expect(r.status).toBe(0);
      expect(JSON.parse(r.stdout.trim())).toEqual({ impl: 'wasm', workers: 1, c0: 320, cLast: 320 });
      expect(Date.now() - t0).toBeLessThan(15_000);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
