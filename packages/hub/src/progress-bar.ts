// The apps' download display: a `cli-progress` bar (bytes, rate, ETA, current file) on a terminal;
// plain lines elsewhere (CI logs, pipes): one when a file starts and one at each tenth of the total.

import cliProgress from 'cli-progress';
import type { DownloadProgress } from './fetch-file';

/** A progress callback for {@link resolveModel} / {@link downloadModel} and its end. */
export interface DownloadDisplay {
  /** Pass as `onProgress`. */
  readonly onProgress: (p: DownloadProgress) => void;
  /** End the display (the bar's last state stays on screen). */
  stop(): void;
}

/** `1.5 GB`, `230.4 MB`, `12.0 kB`, `512 B` (decimal units, as the Hub shows sizes). */
export function formatBytes(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} GB`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} kB`;
  return `${n} B`;
}

/** A download display on `stream` (default stderr): a bar on a TTY, lines otherwise (see the file header). */
export function downloadProgressBar(stream: { write(text: string): unknown; readonly isTTY?: boolean } = process.stderr): DownloadDisplay {
  let bar: cliProgress.SingleBar | null = null;
  let file = '';
  let tenth = -1;
  let start = 0;
  let startBytes = 0;
  const line = (s: string) => stream.write(`${s}\n`);
  return {
    onProgress(p) {
      if (stream.isTTY === true) {
        if (bar === null) {
          bar = new cliProgress.SingleBar({
            stream: stream as NodeJS.WritableStream, format: `${p.repo} {bar} {percentage}% {done}/{size} {speed}/s ETA {eta_formatted} {file}`, barsize: 30, hideCursor: true, etaBuffer: 50, fps: 5,
          }, cliProgress.Presets.shades_classic);
          start = Date.now();
          startBytes = p.bytes;
          bar.start(p.total, p.bytes, { done: formatBytes(p.bytes), size: formatBytes(p.total), speed: '--', file: p.file });
        }
        const seconds = (Date.now() - start) / 1000;
        bar.setTotal(p.total);
        bar.update(p.bytes, { done: formatBytes(p.bytes), size: formatBytes(p.total), speed: seconds > 0.5 ? formatBytes((p.bytes - startBytes) / seconds) : '--', file: p.file });
        return;
      }
      if (p.file !== file) {
        file = p.file;
        line(`downloading ${p.repo}: ${p.file} (${formatBytes(p.fileTotal)})`);
      }
      const t = p.total > 0 ? Math.floor((10 * p.bytes) / p.total) : 10;
      if (t > tenth) {
        tenth = t;
        line(`${p.repo}: ${formatBytes(p.bytes)} of ${formatBytes(p.total)} (${t * 10}%)`);
      }
    },
    stop() {
      bar?.stop();
      bar = null;
    },
  };
}

/** Run `load` with a download display on `stream` (see {@link downloadProgressBar}), ended however `load` ends. */
export async function withDownloadDisplay<T>(stream: Parameters<typeof downloadProgressBar>[0], load: (onProgress: DownloadDisplay['onProgress']) => Promise<T>): Promise<T> {
  const display = downloadProgressBar(stream);
  try {
    return await load(display.onProgress);
  } finally {
    display.stop();
  }
}
