import fs from 'node:fs';

/**
 * Fill a directory under a temporary name, then swap it in for `dir` (the old one, if any, is
 * removed afterwards): a crash never leaves a half-written directory at `dir`.
 */
export function writeDirAtomically(dir: string, fill: (tmp: string) => void): void {
  const tmp = `${dir}.tmp-${process.pid}-${Date.now()}`;
  fs.mkdirSync(tmp, { recursive: true });
  try {
    fill(tmp);
    const old = `${dir}.old-${process.pid}-${Date.now()}`;
    if (fs.existsSync(dir)) fs.renameSync(dir, old);
    fs.renameSync(tmp, dir);
    fs.rmSync(old, { recursive: true, force: true });
  } catch (e) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
}
