// The committed modules are what the generators make now (byte for byte, both variants), their
// function names are the ones the host expects, and both compile in this runtime.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { wasmApi } from '../../../wasm/api';
import { committedBytes, moduleFns, moduleNames, renderGeneratedFile } from './module';

describe('product module', () => {
  it('module.generated.ts is a fresh build of the generators (run `npm run generate:quant -w @apertus/tensor` after changing one)', () => {
    const committed = fs.readFileSync(path.join(import.meta.dirname, 'module.generated.ts'), 'utf8');
    expect(committed === renderGeneratedFile()).toBe(true);
  });

  for (const v of ['relaxed', 'simd'] as const) {
    it(`${v}: the functions are named as the host calls them, and the module compiles here`, () => {
      expect(moduleFns(v).map((f) => f.name)).toEqual(moduleNames(v));
      expect(wasmApi!.validate(committedBytes(v))).toBe(true);
    });
  }
});
