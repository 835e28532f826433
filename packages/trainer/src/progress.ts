// Progress display: a `cli-progress` bar with loss, learning rate, tokens/s and ETA on a terminal;
// plain lines every few steps elsewhere (CI logs, pipes); nothing when turned off.

import cliProgress from 'cli-progress';
import { TrainerOptionError } from './errors';

/** How progress is shown: a live bar, periodic lines, nothing, or `auto` (bar on a TTY, else lines). */
export type ProgressMode = 'auto' | 'bar' | 'lines' | 'off';

/** Options of {@link ProgressReporter}. */
export interface ProgressOptions {
  /** Last step of the run. */
  readonly totalSteps: number;
  /** Step the run starts from (non-zero when resuming). Default 0. */
  readonly startStep?: number;
  /** Display mode. Default `auto`. */
  readonly mode?: ProgressMode;
  /** Where progress goes. Default `process.stderr`. */
  readonly stream?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Where {@link ProgressReporter.log} messages go when no bar is shown. Default `process.stdout`. */
  readonly logStream?: NodeJS.WritableStream;
  /** In `lines` mode, print every this many steps (and at the last step). Default: ≈ 20 lines per run. */
  readonly every?: number;
  /** Clock in milliseconds (tests inject one). Default `performance.now`. */
  readonly now?: () => number;
  /** The device the steps run on, shown on every line (`webgpu (google swiftshader ...)`). */
  readonly device?: string;
}

/** What {@link ProgressReporter.update} shows after a step. */
export interface ProgressUpdate {
  /** The step just completed. */
  readonly step: number;
  /** Tokens processed by that step. */
  readonly tokens: number;
  /** Its training loss. */
  readonly loss: number;
  /** Its learning rate. */
  readonly lr: number;
}

/** Format seconds as `1h02m`, `3m05s` or `12s`. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '--';
  const s = Math.round(seconds);
  if (s >= 3600) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${s}s`;
}

/** Format a rate as `950`, `3.4k` or `1.2M`. */
export function formatRate(x: number): string {
  if (!Number.isFinite(x)) return '--';
  if (x >= 1e6) return `${(x / 1e6).toFixed(1)}M`;
  if (x >= 1e3) return `${(x / 1e3).toFixed(1)}k`;
  return x.toFixed(0);
}

/**
 * Tracks throughput over a sliding window of recent steps and shows progress. Tokens/s and the
 * ETA use the last `window` steps of this process only (a resumed run does not count the time
 * spent before it was started, and evaluation pauses drop out of the window quickly).
 */
export class ProgressReporter {
  private readonly total: number;
  private readonly mode: Exclude<ProgressMode, 'auto'>;
  private readonly stream: NodeJS.WritableStream;
  private readonly logStream: NodeJS.WritableStream;
  private readonly every: number;
  private readonly now: () => number;
  private readonly device: string;
  private readonly window: { t: number; tokens: number }[] = [];
  private readonly started: number;
  private multi: cliProgress.MultiBar | null = null;
  private bar: cliProgress.SingleBar | null = null;

  constructor(options: ProgressOptions) {
    const { totalSteps } = options;
    if (!Number.isInteger(totalSteps) || totalSteps < 0) throw new TrainerOptionError('totalSteps', `must be a non-negative integer, got ${totalSteps}`);
    const start = options.startStep ?? 0;
    this.total = totalSteps;
    this.stream = options.stream ?? process.stderr;
    this.logStream = options.logStream ?? process.stdout;
    const mode = options.mode ?? 'auto';
    if (!['auto', 'bar', 'lines', 'off'].includes(mode)) throw new TrainerOptionError('mode', `expected auto, bar, lines or off, got ${String(mode)}`);
    this.mode = mode === 'auto' ? ((this.stream as { isTTY?: boolean }).isTTY ? 'bar' : 'lines') : mode;
    this.every = options.every ?? Math.max(1, Math.round(totalSteps / 20));
    this.now = options.now ?? (() => performance.now());
    this.device = options.device === undefined ? '' : ` | ${options.device}`;
    this.started = this.now();
    this.window.push({ t: this.started, tokens: 0 });
    if (this.mode === 'bar') {
      this.multi = new cliProgress.MultiBar(
        {
          stream: this.stream,
          format: ` {bar} {value}/{total} | loss {loss} | lr {lr} | {tps} tok/s${this.device} | {elapsed} elapsed | ETA {etaText}`,
          hideCursor: true,
          barsize: 24,
          fps: 5,
          etaBuffer: 20,
        },
        cliProgress.Presets.shades_classic,
      );
      this.bar = this.multi.create(totalSteps, start, { loss: '--', lr: '--', tps: '--', elapsed: '0s', etaText: '--' });
    }
  }

  /** Tokens per second over the recent window (NaN before two data points). */
  get tokensPerSecond(): number {
    const first = this.window[0]!;
    const last = this.window[this.window.length - 1]!;
    const dt = (last.t - first.t) / 1000;
    let tokens = 0;
    for (let i = 1; i < this.window.length; i++) tokens += this.window[i]!.tokens;
    return dt > 0 ? tokens / dt : Number.NaN;
  }

  /** Seconds per step over the recent window (NaN before two data points). */
  get secondsPerStep(): number {
    const n = this.window.length - 1;
    if (n < 1) return Number.NaN;
    return (this.window[n]!.t - this.window[0]!.t) / 1000 / n;
  }

  /** Record a completed step and refresh the display. Returns the line printed (lines mode) or null. */
  update(u: ProgressUpdate): string | null {
    this.window.push({ t: this.now(), tokens: u.tokens });
    if (this.window.length > 21) this.window.shift();
    const eta = (this.total - u.step) * this.secondsPerStep;
    const elapsed = (this.now() - this.started) / 1000;
    const fields = {
      loss: Number.isFinite(u.loss) ? u.loss.toFixed(4) : String(u.loss),
      lr: u.lr.toExponential(2),
      tps: formatRate(this.tokensPerSecond),
      elapsed: formatDuration(elapsed),
      etaText: formatDuration(eta),
    };
    if (this.bar) {
      this.bar.update(u.step, fields);
      return null;
    }
    if (this.mode === 'lines' && (u.step % this.every === 0 || u.step === this.total)) {
      const pct = this.total > 0 ? Math.floor((100 * u.step) / this.total) : 100;
      const line = `step ${u.step}/${this.total} (${pct}%) | loss ${fields.loss} | lr ${fields.lr} | ${fields.tps} tok/s${this.device} | ${fields.elapsed} elapsed | ETA ${fields.etaText}`;
      this.stream.write(`${line}\n`);
      return line;
    }
    return null;
  }

  /**
   * Forget the time since the last step (call after an evaluation or a checkpoint save, so the
   * pause does not count as training time in tokens/s and the ETA).
   */
  pause(): void {
    this.window.length = 0;
    this.window.push({ t: this.now(), tokens: 0 });
  }

  /** Print a message above the bar, or as a plain line on `logStream` when there is no bar. */
  log(message: string): void {
    if (this.multi) {
      this.multi.log(`${message}\n`);
      this.multi.update(); // flush now, not at the next redraw
    }
    else this.logStream.write(`${message}\n`);
  }

  /** Stop the bar (restores the cursor). */
  stop(): void {
    this.multi?.stop();
    this.multi = null;
    this.bar = null;
  }
}
