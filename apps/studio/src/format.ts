// How the page writes sizes.

/** Bytes as a user reads them: `812 B`, `3.4 KiB`, `12.1 MiB`. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 ** 2).toFixed(1)} MiB`;
}
