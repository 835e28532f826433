// `npm run pack`: every publishable package (packages/*, not private) as the tarball npm would
// publish, written to packed/ (or the folder given). The READMEs' install path until the packages
// are on the registry: `npm install <clone>/packed/*.tgz`; tooling/pack's release check packs and
// installs them this way. Needs the packages built (`npm run pack` builds them first).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Directories of the publishable packages. */
export function publishable() {
  return fs.readdirSync(path.join(root, 'packages'))
    .map((d) => path.join(root, 'packages', d))
    .filter((dir) => !JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).private);
}

/** Pack every publishable package into `dest`; npm's JSON report (name, filename, files) per tarball. */
export function packAll(dest) {
  fs.mkdirSync(dest, { recursive: true });
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const r = spawnSync(npm, ['pack', '--json', '--pack-destination', dest, ...publishable().flatMap((dir) => ['-w', dir])], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`npm pack failed:\n${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout.slice(r.stdout.indexOf('['), r.stdout.lastIndexOf(']') + 1));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dest = path.resolve(process.argv[2] ?? path.join(root, 'packed'));
  const list = packAll(dest);
  for (const t of list) process.stdout.write(`${path.join(dest, t.filename)}\n`);
  process.stdout.write(`${list.length} tarballs; install them together: npm install ${path.relative(process.cwd(), dest) || '.'}/*.tgz\n`);
}
