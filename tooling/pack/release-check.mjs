// `npm run release:check`: the release one command away, rehearsed without publishing. In a
// throwaway git worktree of HEAD (with this checkout's node_modules and builds), `changeset
// version` applies the pending changesets (versions, internal ranges, CHANGELOG.md), then
// `npm publish --dry-run` packs every publishable package as the registry would take it. Exits 1
// naming the first package that fails. The real release: `npm run ci:version`, commit, `npm run ci:release`.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}):\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-release-'));
const tree = path.join(work, 'tree');
run('git', ['worktree', 'add', '--detach', tree, 'HEAD'], root);
try {
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(tree, 'node_modules'));
  run(process.execPath, [path.join(root, 'node_modules/@changesets/cli/bin.js'), 'version'], tree);
  for (const dir of fs.readdirSync(path.join(tree, 'packages'))) {
    const pkg = JSON.parse(fs.readFileSync(path.join(tree, 'packages', dir, 'package.json'), 'utf8'));
    if (pkg.private) continue;
    const built = path.join(root, 'packages', dir, 'dist');
    if (!fs.existsSync(built)) throw new Error(`${pkg.name} is not built: run npm run build first`);
    fs.cpSync(built, path.join(tree, 'packages', dir, 'dist'), { recursive: true });
    run(npm, ['publish', '--dry-run', '-w', path.join('packages', dir)], tree);
    process.stdout.write(`${pkg.name}@${pkg.version}: publish --dry-run ok${fs.existsSync(path.join(tree, 'packages', dir, 'CHANGELOG.md')) ? ', CHANGELOG.md written' : ''}\n`);
  }
} finally {
  run('git', ['worktree', 'remove', '--force', tree], root);
  fs.rmSync(work, { recursive: true, force: true });
}
