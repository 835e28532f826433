/** Copies of strided views as a WGSL kernel of the webgpu device: one thread per output element. */
import type { F32 } from '../../arrays';
import { coalesce } from '../../shape';
import { ShapeError } from '../../errors';
import type { WebgpuContext } from '../../webgpu/kernel';
import { MAIN_1D, params, wgsl } from '../../webgpu/wgsl';
import { checkStrided } from './reference';

/** Most axes a strided copy may have after coalescing. */
const MAX_AXES = 6;
const AXES = Array.from({ length: MAX_AXES }, (_, i) => i);
const COPY_P = params(['n', 'u32'], ['rank', 'u32'], ['offset', 'u32'], ...AXES.flatMap((i) => [[`d${i}`, 'u32'], [`s${i}`, 'u32']] as const));

/** out = the strided view (offset, shape, strides) of x, row-major. */
export function copyStrided(ctx: WebgpuContext, x: F32, offset: number, shape: readonly number[], strides: readonly number[], out: F32): void {
  const n = checkStrided(x, offset, shape, strides, out);
  if (n === 0) return;
  const axes = coalesce(shape, strides, shape.map(() => 0));
  if (axes.length > MAX_AXES) throw new ShapeError(`copyStrided: [${shape}] has ${axes.length} axes after merging, more than ${MAX_AXES}`);
  const v: Record<string, number> = { n, rank: axes.length, offset };
  for (const i of AXES) {
    const ax = axes[axes.length - 1 - i];
    v[`d${i}`] = ax?.n ?? 1; v[`s${i}`] = ax?.sa ?? 0;
  }
  const walk = AXES.map((i) => `  if (${i}u < p.rank) { let c = r % p.d${i}; r = r / p.d${i}; ix = ix + c * p.s${i}; }`).join('\n');
  const k = ctx.kernel('copyStrided', '', () => wgsl(COPY_P, [['x', 'r', 'f32'], ['y', 'w', 'f32']],
    `${MAIN_1D}  var r = i;\n  var ix = p.offset;\n${walk}\n  y[i] = x[ix];\n}\n`));
  ctx.run(k, COPY_P.pack(v as never), [ctx.st.input(x, 'copy source'), ctx.st.output(out, 'copy')], ctx.grid(Math.ceil(n / 256)));
}
