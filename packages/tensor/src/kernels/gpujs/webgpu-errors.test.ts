// What `createWebgpuKernels` says when WebGPU cannot run: each case runs in a child process, since
// the Vulkan loader reads its environment once per process.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { SWIFTSHADER_ICD } from './webgpu';

const here = dirname(fileURLToPath(import.meta.url));
// Inside the package so that the external 'gpu.js' and 'webgpu' resolve from node_modules.
const outDir = join(here, '../../../node_modules/.cache/webgpu-errors-test');
const outfile = join(outDir, 'probe.mjs');

/** The child: build kernels, run one op, optionally destroy the device and run again; print what happened as JSON. */
const probe = `
import { createWebgpuKernels } from ${JSON.stringify(join(here, 'index.ts'))};
import { createRequire } from 'node:module';
const report = (e) => JSON.stringify({ name: e.name, missing: e.missing, install: e.install, message: e.message });
let ks;
try {
  ks = await createWebgpuKernels();
  const out = new Float32Array(2);
  await ks.unary('exp', new Float32Array([0, 1]), out);
  if (process.env.LOSE_DEVICE === '1') {
    const gpujs = createRequire(${JSON.stringify(join(here, 'index.ts'))}).resolve('gpu.js');
    const { WebGPUContext } = createRequire(gpujs)('./backend/web-gpu/context');
    await WebGPUContext.destroy();
    await new Promise((r) => setTimeout(r, 200));
    await ks.unary('exp', new Float32Array([0, 1]), out);
  }
  console.log(JSON.stringify({ ok: true, out: Array.from(out) }));
} catch (e) {
  console.log(report(e));
}
process.exit(0);
`;

function runProbe(env: Record<string, string>): Record<string, unknown> {
  const stdout = execFileSync(process.execPath, [outfile], {
    env: { ...process.env, XDG_RUNTIME_DIR: '/tmp', ...env },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
    timeout: 150_000,
  });
  return JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown>;
}

describe('webgpu without a usable adapter', { timeout: 180_000 }, () => {
  beforeAll(async () => {
    mkdirSync(outDir, { recursive: true });
    await build({
      stdin: { contents: probe, resolveDir: here, loader: 'ts' },
      bundle: true, platform: 'node', format: 'esm', outfile, external: ['gpu.js', 'webgpu'], logLevel: 'error',
    });
  }, 60_000);

  it('names the missing Vulkan driver when VK_ICD_FILENAMES points nowhere, and what to install', () => {
    const r = runProbe({ VK_ICD_FILENAMES: '/nonexistent/icd.json' });
    expect(r.name).toBe('WebgpuUnavailableError');
    expect(r.missing).toBe('vulkan-driver');
    expect(r.message).toContain('/nonexistent/icd.json');
    expect(r.install).toContain('chromium');
    expect(r.install).toContain(SWIFTSHADER_ICD);
  });

  it('reports a lost device as such', () => {
    expect(existsSync(SWIFTSHADER_ICD), `${SWIFTSHADER_ICD} (Debian package chromium)`).toBe(true);
    const r = runProbe({ VK_ICD_FILENAMES: SWIFTSHADER_ICD, LOSE_DEVICE: '1' });
    expect(r.name).toBe('WebgpuUnavailableError');
    expect(r.missing).toBe('device-lost');
    expect(r.message).toMatch(/device was lost/);
  });

  it('runs in the child when the driver is there (the probe itself works)', () => {
    const r = runProbe({ VK_ICD_FILENAMES: SWIFTSHADER_ICD });
    expect(r.ok).toBe(true);
    const [one, e] = r.out as number[];
    expect(one).toBe(1);
    expect(Math.abs(e! - Math.E)).toBeLessThan(1e-6);
  });
});
