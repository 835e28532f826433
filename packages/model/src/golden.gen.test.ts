import fs from 'node:fs';
import path from 'node:path';
import { test } from 'vitest';
import { ApertusModel } from './model';
import { GRAD_NAMES, PARITY_CONFIG, parityInputs, runReference } from '../test/parity-fixture';

/**
 * Writes test/golden/parity.json from the PyTorch reference. It only runs when asked
 * (`APERTUS_WRITE_GOLDEN=1 npx vitest run --project model src/golden.gen.test.ts`); otherwise it
 * checks that the committed golden was produced for the current parity inputs.
 */
test('golden file is present and describes the current inputs', () => {
  const file = path.join(__dirname, '../test/golden/parity.json');
  if (process.env.APERTUS_WRITE_GOLDEN === '1') {
    const out: Record<string, unknown> = {};
    for (const packed of [false, true]) {
      const model = ApertusModel.init(PARITY_CONFIG, 1234);
      const inp = parityInputs(packed);
      const ref = runReference(model, inp);
      const round = (xs: number[]) => xs.map((x) => Number(x.toPrecision(9)));
      out[packed ? 'packed' : 'plain'] = { logits: round(ref.logits), loss: ref.loss, grads: Object.fromEntries(GRAD_NAMES.map((n) => [n, round(ref.grads[n]!)])), inputs: inp };
    }
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify(out));
  }
  const golden = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, { inputs: unknown }>;
  for (const packed of [false, true]) {
    if (JSON.stringify(golden[packed ? 'packed' : 'plain']!.inputs) !== JSON.stringify(parityInputs(packed))) throw new Error('golden inputs differ: regenerate');
  }
});
