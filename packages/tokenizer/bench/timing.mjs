// Timing helpers shared by the benchmarks.

/** Seconds `fn` takes (awaited). */
export async function time(fn) {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

/** The best (smallest) of several timings. */
export const best = (xs) => Math.min(...xs);

/** Total UTF-8 size of `texts` in MB. */
export const megabytes = (texts) => texts.reduce((n, t) => n + Buffer.byteLength(t), 0) / 1e6;
