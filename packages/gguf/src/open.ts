// Node's way in: a GGUF file opened by path, read lazily through a file descriptor, and loaded.

import fs from 'node:fs';
import { GgufIoError } from './errors';
import { GgufFile } from './file';
import { loadGgufFile, type LoadedGguf, type LoadGgufOptions } from './load';

/** Open and validate a file (typed errors name the file and the key or tensor at fault). */
export function openGgufFile(path: string): GgufFile {
  let fd: number;
  let size: number;
  try {
    fd = fs.openSync(path, 'r');
  } catch (e) {
    throw new GgufIoError(`cannot open (${(e as Error).message})`, { file: path, cause: e });
  }
  try {
    size = fs.fstatSync(fd).size;
  } catch (e) {
    fs.closeSync(fd);
    throw new GgufIoError(`cannot read (${(e as Error).message})`, { file: path, cause: e });
  }
  let open = true;
  return GgufFile.fromSource({
    size,
    readAt(bytes, position) {
      let done = 0;
      while (done < bytes.length) {
        const n = fs.readSync(fd, bytes, done, bytes.length - done, position + done);
        if (n === 0) throw new GgufIoError(`short read at byte ${position + done}`, { file: path });
        done += n;
      }
    },
    close() {
      if (open) fs.closeSync(fd);
      open = false;
    },
  }, path);
}

/** Load the Apertus GGUF file at `path` (see {@link loadGgufFile} for what is checked). */
export function loadGguf(path: string, options: LoadGgufOptions = {}): LoadedGguf {
  return loadGgufFile(openGgufFile(path), options);
}
