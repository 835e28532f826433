// Shared vitest project preset for Apertus.ts.
// Every `@apertus/<name>` import of a package under packages/ resolves to
// `packages/<name>/src/index.ts` (and a subpath `@apertus/<name>/<entry>` to
// `packages/<name>/src/<entry>.ts`), so a test always runs against the sources next to it, never a
// stale build. The tooling packages (`@apertus/peers`, …) resolve as installed.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { defineProject } from 'vitest/config';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const packages = readdirSync(path.join(root, 'packages'), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).join('|');

/** Build a vitest project config for the package at `dir` (pass `import.meta.dirname`). */
export function apertusProject(dir, overrides = {}) {
  const { test = {}, ...rest } = overrides;
  return defineProject({
    resolve: {
      alias: [
        { find: new RegExp(`^@apertus/(${packages})$`), replacement: path.join(root, 'packages/$1/src/index.ts') },
        { find: new RegExp(`^@apertus/(${packages})/([a-z0-9-]+)$`), replacement: path.join(root, 'packages/$1/src/$2.ts') },
      ],
    },
    test: {
      name: path.basename(dir),
      root: dir,
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      environment: 'node',
      testTimeout: 60_000,
      // beforeAll/afterAll start servers, browsers and models or remove temp trees: vitest's 10 s
      // default is too short on a loaded 2-core CI machine.
      hookTimeout: 60_000,
      ...test,
    },
    ...rest,
  });
}
