/**
 * Writing a WGSL kernel for the runtime: its parameters (a uniform struct of u32/i32/f32 fields,
 * packed from named values), its buffers (bindings 1…, read-only or read-write), and a body with
 * the entry point `main`. `WebgpuContext` builds each kernel text once per key and records its
 * dispatches; it is what `onWebgpu` hands to the packages that register webgpu kernels.
 */
import { ShapeError } from '../errors';
import type { Binding, Kernel, WebgpuRuntime } from './runtime';
import type { DeviceStorage } from './storage';

/** A uniform field: u32, i32 or f32. */
export type FieldType = 'u32' | 'i32' | 'f32';

/** The uniform parameters of a kernel: WGSL struct `P` (bound as `p`) and how to pack values into it. */
export class Params<N extends string> {
  readonly wgsl: string;
  constructor(private readonly fields: readonly (readonly [N, FieldType])[]) {
    this.wgsl = `struct P {\n${fields.map(([n, t]) => `  ${n}: ${t},`).join('\n')}\n}\n@group(0) @binding(0) var<uniform> p: P;\n`;
  }

  /** The words of the struct for these values (an i32 field takes a negative value as it is; f32 fields round to float32). */
  pack(values: Record<N, number>): Uint32Array {
    const w = new Uint32Array(this.fields.length);
    const f = new Float32Array(w.buffer), i = new Int32Array(w.buffer);
    this.fields.forEach(([n, t], k) => {
      const v = values[n];
      if (typeof v !== 'number' || Number.isNaN(v) && t !== 'f32') throw new ShapeError(`kernel parameter ${n}: ${String(v)}`);
      if (t === 'f32') f[k] = v;
      else if (t === 'i32') i[k] = v;
      else w[k] = v >>> 0;
    });
    return w;
  }
}

/** Named uniform fields. */
export function params<N extends string>(...fields: (readonly [N, FieldType])[]): Params<N> {
  return new Params(fields);
}

/** A storage buffer of a kernel: its WGSL name, access and element type (`f32`, `u32`, `i32`, `vec4<f32>`…). */
export type Buffer = readonly [name: string, access: 'r' | 'w', type: string];

/**
 * The text of a kernel: parameters at binding 0 (when given), then `buffers` at 1, 2, … and the
 * source (helper functions and `main`). `enable` lines come first (`f16`, `subgroups`).
 */
export function wgsl(p: Params<string> | null, buffers: readonly Buffer[], source: string, enable: readonly string[] = []): { wgsl: string; bindings: string } {
  const first = p === null ? 0 : 1;
  const decl = buffers.map(([name, access, type], i) =>
    `@group(0) @binding(${first + i}) var<storage, ${access === 'r' ? 'read' : 'read_write'}> ${name}: array<${type}>;`).join('\n');
  const head = enable.map((e) => `enable ${e};\n`).join('');
  return { wgsl: `${head}${p?.wgsl ?? ''}${decl}\n${source}`, bindings: (p === null ? '' : 'u') + buffers.map(([, a]) => a).join('') };
}

/** What the kernels of device `webgpu` record into: the runtime, the buffer table, the adapter's features, and the kernel texts made so far. */
export class WebgpuContext {
  /** Whether subgroup operations are available (and allowed). */
  readonly subgroups: boolean;
  /** Whether `f16` arithmetic (`shader-f16`) is available (and allowed). */
  readonly f16: boolean;
  private readonly made = new Map<string, Kernel>();

  constructor(readonly rt: WebgpuRuntime, readonly st: DeviceStorage) {
    this.subgroups = rt.features.has('subgroups');
    this.f16 = rt.features.has('shader-f16');
  }

  /** The kernel `name` specialised by `key` (its text made once). */
  kernel(name: string, key: string, make: () => { wgsl: string; bindings: string }): Kernel {
    const full = `${name}|${key}`;
    let k = this.made.get(full);
    if (k === undefined) {
      k = { name, ...make() };
      this.made.set(full, k);
    }
    return k;
  }

  /** Record a dispatch. */
  run(k: Kernel, values: Uint32Array | null, buffers: readonly Binding[], groups: readonly [number, number, number]): void {
    // WebGPU lets a dispatch write a buffer only through one binding, used by nothing else: an
    // output that shares its buffer with an input (an op writing its result over an operand)
    // goes to a temporary buffer, copied over the output after the kernel.
    const first = k.bindings.startsWith('u') ? 1 : 0;
    let bound = buffers;
    const copies: [Binding, Binding][] = [];
    buffers.forEach((b, i) => {
      if (k.bindings[first + i] !== 'w' || !buffers.some((o, j) => j !== i && o.id === b.id)) return;
      const t = this.st.temp(b.size, `${k.name} output`);
      copies.push([t, b]);
      bound = bound.map((x, j) => (j === i ? t : x));
    });
    this.rt.dispatch(k, values, bound, groups);
    for (const [t, b] of copies) this.rt.copy(t.id, t.offset, b.id, b.offset, Math.ceil(b.size / 4) * 4);
  }

  /**
   * A registry kernel from `f`, a function that records its dispatches on this context: each call
   * runs `f(this, ...args)` and then releases the temporary buffers it took.
   */
  record<A extends unknown[]>(f: (ctx: WebgpuContext, ...args: A) => void): (...args: A) => void {
    return (...args: A) => {
      try {
        f(this, ...args);
      } finally {
        this.st.endOp();
      }
    };
  }

  /** `n` workgroups as a grid within the per-dimension limit (the kernel reads its index with `group_index`). */
  grid(n: number): [number, number, number] {
    const max = this.rt.limits.maxComputeWorkgroupsPerDimension;
    if (n <= max) return [n, 1, 1];
    const y = Math.ceil(n / max);
    return [Math.ceil(n / y), y, 1];
  }
}
