// Each package's core bundles for a browser (`esbuild --bundle --platform=browser` of the entry its
// manifest gives under the `browser` condition) and imports no Node builtin: esbuild refuses an
// unresolvable `node:*` import for this platform, and the metafile lists every import it saw.

import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { BROWSER_PACKAGES, browserTarget, bundleForBrowser, root } from './resolve';

describe.each(BROWSER_PACKAGES)('@apertus/%s', (pkg) => {
  test('its browser entry bundles for the browser platform with no Node builtin', async () => {
    const target = browserTarget(pkg, '.');
    const src = path.join(root, 'packages', pkg, 'src', path.basename(target).replace(/\.js$/, '.ts'));
    expect(fs.existsSync(src), src).toBe(true);
    const { result, metafile, nodeImports } = await bundleForBrowser(src);
    expect(result.errors).toEqual([]);
    expect(nodeImports).toEqual([]);
    // The bundle holds the package's own sources (not an empty stub).
    expect(Object.keys(metafile.inputs).some((f) => f.includes(`packages/${pkg}/src/`))).toBe(true);
  });
});

test('a package with Node I/O names a separate browser entry and keeps its Node entry for Node', () => {
  for (const pkg of ['safetensors', 'tokenizer', 'model', 'trainer', 'recipes', 'gguf', 'hub', 'pretrained']) {
    const manifest = JSON.parse(fs.readFileSync(path.join(root, 'packages', pkg, 'package.json'), 'utf8')) as { exports: Record<string, Record<string, unknown>> };
    expect(browserTarget(pkg, '.'), pkg).toBe('./dist/browser.js');
    expect(JSON.stringify(manifest.exports['.']!['node']), pkg).toContain('./dist/index.js');
  }
});
