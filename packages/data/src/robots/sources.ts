import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { DocumentReadError, RobotsSourceError } from '../errors';

/**
 * Where robots.txt contents come from, keyed by host (`URL.host`: lower-case
 * hostname plus `:port` when present). No network access: the contents are a
 * snapshot, as Apertus used (a per-domain table).
 */
export interface RobotsSource {
  /** robots.txt content for `host`, or `undefined` when the snapshot has none. */
  get(host: string): string | undefined | Promise<string | undefined>;
}

/** robots.txt contents held in memory (`host → content`); host keys are lower-cased. */
export class MapRobotsSource implements RobotsSource {
  private readonly map = new Map<string, string>();

  /** @param entries `host → robots.txt content`, as a `Map` or a plain object. */
  constructor(entries: ReadonlyMap<string, string> | Readonly<Record<string, string>>) {
    const it = entries instanceof Map ? entries.entries() : Object.entries(entries);
    for (const [host, content] of it) this.map.set(host.toLowerCase(), content);
  }

  /** Content for `host`, if present. */
  get(host: string): string | undefined {
    return this.map.get(host.toLowerCase());
  }

  /** Number of hosts in the snapshot. */
  get size(): number {
    return this.map.size;
  }
}

const SAFE_HOST = /^[a-z0-9._~\-]+(:[0-9]{1,5})?$/;

/**
 * robots.txt contents stored as files `<dir>/<host>.txt` (e.g. `example.com.txt`,
 * `example.com:8080.txt`). A host without a file has no robots.txt; a host that is
 * not a plain hostname (could escape the directory) is treated the same way.
 * Files are decoded as UTF-8 with replacement characters, as the Apertus filter did.
 */
export class DirectoryRobotsSource implements RobotsSource {
  private checked: Promise<void> | undefined;

  /** @param directory Directory holding `<host>.txt` files (checked on first use). */
  constructor(readonly directory: string) {}

  /** Throw {@link DocumentReadError} unless the directory exists. */
  async check(): Promise<void> {
    let info;
    try {
      info = await stat(this.directory);
    } catch (cause) {
      throw new DocumentReadError(this.directory, 'robots.txt directory not found', { cause });
    }
    if (!info.isDirectory()) throw new DocumentReadError(this.directory, 'not a directory');
  }

  /** Content of `<dir>/<host>.txt`; `undefined` when missing; {@link RobotsSourceError} when unreadable. */
  async get(host: string): Promise<string | undefined> {
    this.checked ??= this.check();
    await this.checked;
    const key = host.toLowerCase();
    if (!SAFE_HOST.test(key) || key === '.' || key === '..') return undefined;
    const file = path.join(this.directory, `${key}.txt`);
    try {
      const bytes = await readFile(file);
      return new TextDecoder('utf-8').decode(bytes);
    } catch (cause) {
      const code = (cause as { code?: string }).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
      throw new RobotsSourceError(key, `cannot read ${file}`, { cause });
    }
  }
}
