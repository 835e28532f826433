import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { syncBuiltinESMExports } from 'node:module';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHART_MARGIN, MetricsLogger, OutputWriteError, ProgressReporter, escapeXml, formatDuration, niceTicks, readMetrics, renderLossCurve, smooth, svgLineChart, type MetricRecord } from './index';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-report-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

class Sink extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
}

describe('MetricsLogger', () => {
  it('appends JSON lines and, on resume, replaces the file with the checkpoint records', () => {
    const file = path.join(dir, 'm', 'metrics.jsonl');
    const a = new MetricsLogger(file);
    for (let s = 1; s <= 5; s++) a.log({ type: 'train', step: s, loss: 10 - s });
    expect(readMetrics(file).map((r) => r.step)).toEqual([1, 2, 3, 4, 5]);
    // a killed run had logged up to step 5; its checkpoint holds steps 1–3
    const b = new MetricsLogger(file, readMetrics(file).slice(0, 3));
    b.log({ type: 'train', step: 4, loss: 0.5 });
    expect(readMetrics(file)).toEqual([...a.records.slice(0, 3), { type: 'train', step: 4, loss: 0.5 }]);
    expect(b.records.length).toBe(4);
    // a full disk while appending is a typed error and the record is not kept
    const original = fs.appendFileSync;
    (fs as { appendFileSync: unknown }).appendFileSync = () => {
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    };
    syncBuiltinESMExports();
    try {
      expect(() => b.log({ type: 'train', step: 5, loss: 0.4 })).toThrow(OutputWriteError);
      expect(() => b.log({ type: 'train', step: 5, loss: 0.4 })).toThrow(/metrics\.jsonl: disk full/);
    } finally {
      (fs as { appendFileSync: unknown }).appendFileSync = original;
      syncBuiltinESMExports();
    }
    expect(b.records.length).toBe(4);
    // floats survive exactly
    const c = new MetricsLogger(file, []);
    c.log({ type: 'train', step: 1, loss: Math.fround(7.123456789) });
    expect(readMetrics(file)[0]!.loss).toBe(Math.fround(7.123456789));
  });
});

describe('loss-curve plot', () => {
  it('places every point at left + (x−x0)/(x1−x0)·w, top + (1 − (y−y0)/(y1−y0))·h with 5% y padding', () => {
    const W = 400;
    const H = 300;
    const pts = [[0, 10], [5, 4], [10, 6], [20, 2]] as const;
    const svg = svgLineChart([{ name: 'a', color: '#000', points: pts }], { title: 't', xLabel: 'x', yLabel: 'y', width: W, height: H });
    const m = /<polyline data-series="a"[^>]*points="([^"]*)"/.exec(svg)!;
    const got = m[1]!.split(' ').map((p) => p.split(',').map(Number));
    const { left, right, top, bottom } = CHART_MARGIN;
    const pw = W - left - right;
    const ph = H - top - bottom;
    const y0 = 2 - 0.4;
    const y1 = 10 + 0.4;
    pts.forEach(([x, y], i) => {
      expect(got[i]![0]).toBeCloseTo(left + (x / 20) * pw, 2);
      expect(got[i]![1]).toBeCloseTo(top + (1 - (y - y0) / (y1 - y0)) * ph, 2);
    });
    // lower loss is drawn higher up (smaller y)
    expect(got[3]![1]).toBeGreaterThan(got[0]![1]!);
  });

  it('skips non-finite points, escapes text, and renders train, smoothed and validation series', () => {
    const records: MetricRecord[] = [
      { type: 'train', step: 1, loss: 5, lr: 0 },
      { type: 'train', step: 2, loss: Number.NaN as unknown as number, lr: 0.1 },
      { type: 'train', step: 3, loss: 3, lr: 0.2 },
      { type: 'eval', step: 0, valLoss: 6 },
      { type: 'eval', step: 3, valLoss: 3.5 },
      { type: 'sample', step: 3, text: '<b>' },
    ];
    const html = renderLossCurve(records, { title: 'run <x> & "y"', notes: ['a<b'] });
    expect(html).toContain('<title>run &lt;x&gt; &amp; &quot;y&quot;</title>');
    expect(html).toContain('<p>a&lt;b</p>');
    expect(html).not.toContain('<b>');
    const series = [...html.matchAll(/data-series="([^"]*)"[^>]*points="([^"]*)"/g)].map((m) => [m[1], m[2]!.split(' ').length]);
    expect(series).toEqual([['train loss', 2], ['train loss (smoothed)', 2], ['validation loss', 2], ['learning rate', 3]]);
    expect(escapeXml(`'`)).toBe('&#39;');
  });

  it('nice ticks step by 1, 2 or 5 × 10^k and smoothing is a bias-corrected EMA', () => {
    expect(niceTicks(0, 100)).toEqual([0, 20, 40, 60, 80, 100]);
    expect(niceTicks(2.1, 7.9)).toEqual([3, 4, 5, 6, 7]);
    expect(niceTicks(0, 1000, 4)).toEqual([0, 200, 400, 600, 800, 1000]);
    expect(niceTicks(0.0013, 0.0031)).toEqual([0.0015, 0.002, 0.0025, 0.003]);
    expect(smooth([4, 4, 4])).toEqual([4, 4, 4].map((v) => expect.closeTo(v, 12)));
    const s = smooth([1, 3], 0.5);
    expect(s[1]).toBeCloseTo((0.5 * 0.5 * 1 + 0.5 * 3) / (1 - 0.25), 12);
  });
});

describe('ProgressReporter', () => {
  it('prints lines with tokens/s and ETA from the recent window of steps', () => {
    let t = 0;
    const out = new Sink();
    const p = new ProgressReporter({ totalSteps: 10, mode: 'lines', stream: out, every: 2, now: () => t });
    const lines: (string | null)[] = [];
    for (let s = 1; s <= 4; s++) {
      t += 500; // 0.5 s per step, 1000 tokens per step
      lines.push(p.update({ step: s, tokens: 1000, loss: 2.5, lr: 1e-3 }));
    }
    expect(lines[0]).toBeNull();
    expect(lines[3]).toBe('step 4/10 (40%) | loss 2.5000 | lr 1.00e-3 | 2.0k tok/s | 2s elapsed | ETA 3s');
    expect(p.tokensPerSecond).toBe(2000);
    expect(p.secondsPerStep).toBe(0.5);
    t += 60_000; // a long evaluation
    p.pause();
    t += 250;
    p.update({ step: 5, tokens: 1000, loss: 2, lr: 1e-3 });
    expect(p.tokensPerSecond).toBe(4000);
    expect(out.text.split('\n').filter(Boolean).length).toBe(2);
    p.log('checkpoint saved');
    p.stop();
    const d = new ProgressReporter({ totalSteps: 1, mode: 'lines', stream: new Sink(), now: () => t, device: 'webgpu (google swiftshader)' });
    t += 1000;
    expect(d.update({ step: 1, tokens: 10, loss: 1, lr: 1e-3 })).toBe('step 1/1 (100%) | loss 1.0000 | lr 1.00e-3 | 10 tok/s | webgpu (google swiftshader) | 1s elapsed | ETA 0s');
  });

  it('formats durations', () => {
    expect(formatDuration(5.4)).toBe('5s');
    expect(formatDuration(125)).toBe('2m05s');
    expect(formatDuration(3725)).toBe('1h02m');
    expect(formatDuration(Number.NaN)).toBe('--');
  });

  it('draws a bar on a terminal stream and logs messages above it', () => {
    const out = Object.assign(new Sink(), { isTTY: true, columns: 120, cursorTo: () => true, clearLine: () => true, moveCursor: () => true });
    const p = new ProgressReporter({ totalSteps: 4, stream: out, logStream: out });
    p.update({ step: 1, tokens: 10, loss: 1, lr: 0.5 });
    p.log('hello');
    p.stop();
    expect(out.text).toContain('hello');
    expect(out.text).toMatch(/1\/4 \| loss 1\.0000 \| lr 5\.00e-1/);
  });
});
