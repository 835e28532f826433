// Where the Python peers live: a venv at <repo>/.peers/venv made from requirements.txt by
// install.mjs (`npm run peers`; `npm test` runs it first). Tests and benchmarks run their
// reference scripts with `peerPython()`; a missing venv is an error that says how to make it.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The repository root. */
export const repoRoot = path.resolve(here, '../..');
/** The venv folder. */
export const venvDir = path.join(repoRoot, '.peers', 'venv');
/** The pinned requirements. */
export const requirementsFile = path.join(here, 'requirements.txt');

/** The pinned `name==version` lines of requirements.txt. */
export function pinned() {
  return readFileSync(requirementsFile, 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
}

/** The venv's python, or an Error telling how to install it. */
export function peerPython() {
  const py = path.join(venvDir, 'bin', 'python');
  if (!existsSync(py)) throw new Error(`no Python peers at ${venvDir}: run \`npm run peers\` (installs ${pinned().join(', ')})`);
  return py;
}
