import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LOCK_FILE, RunLock, RunLockedError } from './index';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-lock-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('run directory lock', () => {
  it('names its owner (pid and host), refuses a second owner and is gone after release', () => {
    const lock = RunLock.acquire(dir);
    const owner = JSON.parse(fs.readFileSync(path.join(dir, LOCK_FILE), 'utf8'));
    expect(owner).toMatchObject({ pid: process.pid, host: os.hostname() });
    expect(() => RunLock.acquire(dir)).toThrow(RunLockedError);
    expect(() => RunLock.acquire(dir)).toThrow(new RegExp(`in use by process ${process.pid} on ${os.hostname()}`));
    lock.release();
    expect(fs.existsSync(path.join(dir, LOCK_FILE))).toBe(false);
    RunLock.acquire(dir).release();
  });

  it('takes over a stale lock (its process is gone) and refuses a live one or one from another host', () => {
    const file = path.join(dir, LOCK_FILE);
    // A pid that existed and has exited: a finished child process.
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const deadPid = Number(dead.stdout);
    fs.writeFileSync(file, JSON.stringify({ pid: deadPid, host: os.hostname() }));
    const stale: number[] = [];
    const lock = RunLock.acquire(dir, (o) => stale.push(o.pid));
    expect(stale).toEqual([deadPid]);
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).pid).toBe(process.pid);
    lock.release();
    // The parent of this process is alive: its lock holds.
    fs.writeFileSync(file, JSON.stringify({ pid: process.ppid, host: os.hostname() }));
    expect(() => RunLock.acquire(dir)).toThrow(RunLockedError);
    // Another host's process cannot be checked from here: the lock holds.
    fs.writeFileSync(file, JSON.stringify({ pid: deadPid, host: `${os.hostname()}-other` }));
    expect(() => RunLock.acquire(dir)).toThrow(/on .*-other/);
  });
});
