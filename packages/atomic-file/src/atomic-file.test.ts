// The crash-safety contract, checked on the system calls themselves: the bytes land in a
// temporary sibling, the file is fsynced before the rename and the directory after it; a failure
// at any step (a throwing producer, a full disk at any write) leaves the previous contents and no
// temporary file; a directory is swapped in whole, every file of it fsynced first.

import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fsyncTree, renameIntoPlace, tempSibling, writeDirAtomic, writeFileAtomic, writeFileAtomicAsync } from './index';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-atomic-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

type Patchable = Record<'openSync' | 'writeSync' | 'fsyncSync' | 'closeSync' | 'renameSync', (...a: unknown[]) => unknown>;

/**
 * Record the fs calls the write makes (open/fsync/close/rename by path, writes by count), and
 * make the `failAt`-th write throw ENOSPC when asked. Restores the functions when done.
 */
function traced<T>(run: () => T, failAt = Infinity): { result?: T; error?: unknown; log: string[] } {
  const f = fs as unknown as Patchable;
  const original = { ...Object.fromEntries((['openSync', 'writeSync', 'fsyncSync', 'closeSync', 'renameSync'] as const).map((k) => [k, f[k]])) } as Patchable;
  const names = new Map<number, string>();
  const rel = (p: unknown) => path.relative(dir, String(p)).replace(/\.(tmp|old)-[\w-]+/g, '.$1') || '.';
  const log: string[] = [];
  let writes = 0;
  f.openSync = (...a) => {
    const fd = original.openSync(...a) as number;
    names.set(fd, rel(a[0]));
    return fd;
  };
  f.writeSync = (...a) => {
    if (++writes >= failAt) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    if (log.at(-1) !== `write ${names.get(a[0] as number)}`) log.push(`write ${names.get(a[0] as number)}`);
    return original.writeSync(...a);
  };
  f.fsyncSync = (...a) => (log.push(`fsync ${names.get(a[0] as number)}`), original.fsyncSync(...a));
  f.closeSync = (...a) => (log.push(`close ${names.get(a[0] as number)}`), original.closeSync(...a));
  f.renameSync = (...a) => (log.push(`rename ${rel(a[0])} → ${rel(a[1])}`), original.renameSync(...a));
  syncBuiltinESMExports();
  try {
    return { result: run(), log };
  } catch (error) {
    return { error, log };
  } finally {
    Object.assign(f, original);
    syncBuiltinESMExports();
  }
}

const listing = () => fs.readdirSync(dir).sort();

describe('writeFileAtomic', () => {
  it('writes a temporary sibling, fsyncs it, renames it over the file, then fsyncs the directory', () => {
    const file = path.join(dir, 'a.json');
    const { log } = traced(() => writeFileAtomic(file, '{"x": 1}\n'));
    expect(log).toEqual(['write .a.json.tmp', 'fsync .a.json.tmp', 'close .a.json.tmp', 'rename .a.json.tmp → a.json', 'fsync .', 'close .']);
    expect(fs.readFileSync(file, 'utf8')).toBe('{"x": 1}\n');
    expect(listing()).toEqual(['a.json']);
  });

  it('writes text as UTF-8, bytes as they are, and a producer\'s pieces in order', () => {
    const file = path.join(dir, 'b.bin');
    writeFileAtomic(file, 'Grüezi 🇨🇭');
    expect(fs.readFileSync(file)).toEqual(Buffer.from('Grüezi 🇨🇭', 'utf8'));
    const bytes = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) % 256);
    writeFileAtomic(file, bytes);
    expect(new Uint8Array(fs.readFileSync(file))).toEqual(bytes);
    writeFileAtomic(file, (write) => {
      write(bytes.subarray(0, 10));
      write(new Uint8Array(0));
      write(bytes.subarray(10));
    });
    expect(new Uint8Array(fs.readFileSync(file))).toEqual(bytes);
  });

  it('keeps the previous contents and leaves no temporary file when the producer throws or the disk is full at any write', () => {
    const file = path.join(dir, 'keep.txt');
    writeFileAtomic(file, 'old');
    expect(() => writeFileAtomic(file, (write) => {
      write(new Uint8Array([1, 2, 3]));
      throw new Error('producer failed');
    })).toThrow('producer failed');
    expect(fs.readFileSync(file, 'utf8')).toBe('old');
    expect(listing()).toEqual(['keep.txt']);
    for (const failAt of [1, 2, 3]) {
      const { error } = traced(() => writeFileAtomic(file, (write) => [1, 2, 3].forEach((n) => write(new Uint8Array([n])))), failAt);
      expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
      expect(fs.readFileSync(file, 'utf8')).toBe('old');
      expect(listing()).toEqual(['keep.txt']);
    }
  });

  it('fsyncs nothing when told the file is scratch', () => {
    const { log } = traced(() => writeFileAtomic(path.join(dir, 's'), 'x', { fsync: false }));
    expect(log.filter((l) => l.startsWith('fsync'))).toEqual([]);
  });

  it('refuses a missing directory with the error of the open, writing nothing', () => {
    expect(() => writeFileAtomic(path.join(dir, 'no', 'such.txt'), 'x')).toThrow(/ENOENT/);
    expect(listing()).toEqual([]);
  });
});

describe('writeFileAtomicAsync', () => {
  it('writes the same bytes; a failing producer keeps the previous contents and no temporary file', async () => {
    const file = path.join(dir, 'c.txt');
    await writeFileAtomicAsync(file, async (write) => {
      await write(Buffer.from('one '));
      await write(Buffer.from('two'));
    });
    expect(fs.readFileSync(file, 'utf8')).toBe('one two');
    await expect(writeFileAtomicAsync(file, async (write) => {
      await write(Buffer.from('partial'));
      throw new Error('producer failed');
    })).rejects.toThrow('producer failed');
    expect(fs.readFileSync(file, 'utf8')).toBe('one two');
    expect(listing()).toEqual(['c.txt']);
  });
});

describe('renameIntoPlace', () => {
  it('renames a finished temporary file over the target and fsyncs the directory', () => {
    const tmp = tempSibling(path.join(dir, 'd.bin'));
    fs.writeFileSync(tmp, 'done');
    const { log } = traced(() => renameIntoPlace(tmp, path.join(dir, 'd.bin')));
    expect(log).toEqual(['rename .d.bin.tmp → d.bin', 'fsync .', 'close .']);
    expect(listing()).toEqual(['d.bin']);
  });
});

describe('writeDirAtomic', () => {
  const fill = (files: Record<string, string>) => (tmp: string) => {
    for (const [name, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(tmp, name)), { recursive: true });
      fs.writeFileSync(path.join(tmp, name), text);
    }
  };

  it('fsyncs every file of the new directory before swapping it in for the old one, then the parent', () => {
    const target = path.join(dir, 'model');
    writeDirAtomic(target, fill({ 'old.txt': 'old' }));
    const { log } = traced(() => writeDirAtomic(target, fill({ 'config.json': '{}', 'sub/w.bin': 'w' })));
    const renames = log.filter((l) => l.startsWith('rename'));
    expect(renames).toEqual(['rename model → .model.old', 'rename .model.tmp → model']);
    const firstRename = log.indexOf(renames[0]!);
    for (const f of ['.model.tmp/config.json', '.model.tmp/sub/w.bin', '.model.tmp/sub', '.model.tmp']) expect(log.indexOf(`fsync ${f}`), f).toBeGreaterThanOrEqual(0);
    expect(log.slice(firstRename).filter((l) => l.startsWith('fsync'))).toEqual(['fsync .']);
    expect(fs.readdirSync(target).sort()).toEqual(['config.json', 'sub']);
    expect(listing()).toEqual(['model']);
  });

  it('leaves the previous directory as it was and no temporary one when filling fails', () => {
    const target = path.join(dir, 'model');
    writeDirAtomic(target, fill({ 'a.txt': 'a' }));
    expect(() => writeDirAtomic(target, (tmp) => {
      fill({ 'b.txt': 'b' })(tmp);
      throw new Error('fill failed');
    })).toThrow('fill failed');
    expect(fs.readdirSync(target)).toEqual(['a.txt']);
    expect(listing()).toEqual(['model']);
  });

  it('creates missing parents', () => {
    writeDirAtomic(path.join(dir, 'x', 'y'), fill({ 'f': '1' }));
    expect(fs.readFileSync(path.join(dir, 'x', 'y', 'f'), 'utf8')).toBe('1');
  });
});

describe('tempSibling and fsyncTree', () => {
  it('names a hidden sibling in the same directory, never the same name twice', () => {
    fc.assert(fc.property(fc.stringMatching(/^[a-z0-9_-][a-z0-9._-]{0,19}$/), fc.constantFrom('tmp', 'old'), (name, tag) => {
      const target = path.join(dir, name);
      const a = tempSibling(target, tag);
      const b = tempSibling(target, tag);
      expect(path.dirname(a)).toBe(dir);
      expect(path.basename(a).startsWith(`.${name}.${tag}-${process.pid}-`)).toBe(true);
      expect(a).not.toBe(b);
    }));
  });

  it('fsyncs every file below a directory and every directory, children before parents', () => {
    fs.mkdirSync(path.join(dir, 't', 'u'), { recursive: true });
    fs.writeFileSync(path.join(dir, 't', 'a'), 'a');
    fs.writeFileSync(path.join(dir, 't', 'u', 'b'), 'b');
    const { log } = traced(() => fsyncTree(path.join(dir, 't')));
    const synced = log.filter((l) => l.startsWith('fsync')).map((l) => l.slice(6));
    expect([...synced].sort()).toEqual(['t', 't/a', 't/u', 't/u/b']);
    expect(synced.indexOf('t/u/b')).toBeLessThan(synced.indexOf('t/u'));
    expect(synced.at(-1)).toBe('t');
  });
});
