// Every command's `--help`, as a user runs it (the launchers npm links, after `npm run build`):
// one flag set across the binaries. A flag @apertus/cli defines is spelled as it defines it
// wherever it appears (a command may leave out its short alias, never give it another); a long
// name has one value placeholder everywhere, a short alias one long name; the commands that run a model take --model, --threads and --device; the root README lists
// every binary. And the failures a user meets first are one line with the right exit status.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { FLAGS } from '@apertus/cli';
import { expect, test } from 'vitest';

const root = path.resolve(import.meta.dirname, '../../..');
const workspaces = ['packages', 'apps'].flatMap((group) => fs.readdirSync(path.join(root, group)).map((d) => path.join(root, group, d)));
const bins = workspaces.flatMap((dir) => {
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { bin?: Record<string, string> };
  return Object.entries(manifest.bin ?? {}).map(([name, target]) => ({ name, file: path.join(dir, target) }));
});

interface Flag {
  short: string | null;
  long: string;
  /** `<n>`, `<path>`…, or '' for a switch. */
  value: string;
}

/** The options a `--help` lists. */
function helpFlags(name: string, file: string): Flag[] {
  const r = spawnSync(process.execPath, [file, '--help'], { encoding: 'utf8', timeout: 60_000 });
  expect([name, r.status, r.stderr]).toEqual([name, 0, '']);
  const flags: Flag[] = [];
  for (const line of r.stdout.split('\n')) {
    const m = /^ {2}(?:(-[a-zA-Z]), )?(--[a-z][a-z0-9-]*)(?: ([<[][^>\]]+[>\]](?:\.\.\.)?))?(?: {2,}|$)/.exec(line);
    if (m && m[2] !== '--help') flags.push({ short: m[1] ?? null, long: m[2]!, value: m[3] ?? '' });
  }
  return flags;
}

const shared = new Map(Object.values(FLAGS).map((f) => {
  const m = /^(?:(-[a-zA-Z]), )?(--[a-z-]+)(?: (<[^>]+>))?$/.exec(f.flags)!;
  return [m[2]!, { short: m[1] ?? null, long: m[2]!, value: m[3] ?? '' } satisfies Flag];
}));

test('one flag set across every binary', () => {
  const all = new Map(bins.map((b) => [b.name, helpFlags(b.name, b.file)]));
  const placeholders = new Map<string, string>();
  const shorts = new Map<string, string>();
  for (const [name, flags] of all) {
    for (const f of flags) {
      // A shared flag keeps its value placeholder, and its short alias where the command gives one.
      const s = shared.get(f.long);
      if (s) expect({ name, ...f, short: f.short ?? s.short }).toEqual({ name, ...s });
      const seen = placeholders.get(f.long);
      if (seen !== undefined) expect([name, f.long, f.value]).toEqual([name, f.long, seen]);
      placeholders.set(f.long, f.value);
      if (f.short) {
        const long = shorts.get(f.short);
        if (long !== undefined) expect([name, f.short, f.long]).toEqual([name, f.short, long]);
        shorts.set(f.short, f.long);
      }
    }
  }
  // -p is --prompt wherever it exists (never --port), -t --threads (never --temperature).
  expect([shorts.get('-p'), shorts.get('-t')]).toEqual(['--prompt', '--threads']);
  const has = (name: string, long: string) => all.get(name)!.some((f) => f.long === long);
  for (const name of ['apertus-serve', 'apertus-chat', 'apertus-generate', 'apertus-eval', 'apertus-sft', 'apertus-align']) {
    for (const long of ['--model', '--threads', '--device']) expect([name, long, has(name, long)]).toEqual([name, long, true]);
  }
  for (const long of ['--port', '--host', '--ctx']) expect(has('apertus-serve', long)).toBe(true);
});

test('the root README names every binary and links the flag reference', () => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  for (const b of bins) expect(readme, b.name).toContain(`\`${b.name}\``);
  expect(readme).toContain('## Command-line flags');
});

test('a port in use is one line and exit 1; a port out of range one line and exit 2', async () => {
  const serve = bins.find((b) => b.name === 'apertus-serve')!.file;
  const blocker = net.createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const port = (blocker.address() as net.AddressInfo).port;
  const model = path.join(root, 'packages', 'serve', 'src');
  const inUse = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [serve, '--model', model, '--port', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stderr }));
  });
  blocker.close();
  expect(inUse).toEqual({ code: 1, stderr: `apertus-serve: cannot listen on 127.0.0.1:${port}: the port is in use (another server is running there; pick another --port)\n` });
  const range = spawnSync(process.execPath, [serve, '--model', model, '--port', '99999'], { encoding: 'utf8' });
  expect([range.status, range.stderr]).toEqual([2, "apertus-serve: --port: must be an integer in [0, 65535], got '99999'\n"]);
});
