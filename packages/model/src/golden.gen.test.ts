import fs from 'node:fs';
import path from 'node:path';
import { test } from 'vitest';
import { ApertusModel } from './model';
import { PARITY_VARIANTS, parityInputs, runReference } from '../test/parity-fixture';

/**
 * Writes the golden files (test/golden/parity.json for the xIELU model, parity-swiglu.json for
 * the SwiGLU one) from the PyTorch reference. It only writes when asked
 * (`APERTUS_WRITE_GOLDEN=1 npx vitest run --project model src/golden.gen.test.ts`); otherwise it
 * checks that the committed goldens were produced for the current parity inputs.
 */
for (const v of PARITY_VARIANTS) {
  test(`${v.name}: golden file is present and describes the current inputs`, () => {
    if (process.env.APERTUS_WRITE_GOLDEN === '1') {
      const out: Record<string, unknown> = {};
      for (const packed of [false, true]) {
        const model = ApertusModel.init(v.config, 1234);
        const inp = parityInputs(packed);
        const ref = runReference(model, inp);
        const round = (xs: number[]) => xs.map((x) => Number(x.toPrecision(9)));
        out[packed ? 'packed' : 'plain'] = { logits: round(ref.logits), loss: ref.loss, grads: Object.fromEntries(v.grads.map((n) => [n, round(ref.grads[n]!)])), inputs: inp };
      }
      fs.mkdirSync(path.dirname(v.golden), { recursive: true });
      fs.writeFileSync(v.golden, JSON.stringify(out));
    }
    const golden = JSON.parse(fs.readFileSync(v.golden, 'utf8')) as Record<string, { inputs: unknown }>;
    for (const packed of [false, true]) {
      if (JSON.stringify(golden[packed ? 'packed' : 'plain']!.inputs) !== JSON.stringify(parityInputs(packed))) throw new Error('golden inputs differ: regenerate');
    }
  });
}
