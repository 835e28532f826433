// Regenerates the committed Megatron golden pair with the BUILT package:
//   (cd packages/data && npx tsup) && node packages/data/test/make-megatron-golden.mjs
// then check the bytes independently with:
//   /usr/bin/python3 packages/data/test/megatron_reader.py packages/data/test/golden/megatron-uint16 packages/data/test/golden/megatron-int32
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MegatronDatasetWriter, writeMegatronDataset } from '../dist/index.js';

const golden = path.join(path.dirname(fileURLToPath(import.meta.url)), 'golden');

// uint16: vocabulary of 65536 ids, three documents, one sequence each (the Apertus layout)
await writeMegatronDataset(path.join(golden, 'megatron-uint16'), [[11, 12], [13], [65535, 14, 15]], {
  vocabSize: 65536,
  bodId: 1,
  eodId: 2,
});

// int32: the Apertus vocabulary (131072 ids); the middle document has two sequences
const w = new MegatronDatasetWriter(path.join(golden, 'megatron-int32'), { vocabSize: 131072 });
w.addDocument([1, 100000, 2]);
w.pushTokens([1, 5]);
w.endSequence();
w.pushTokens([6, 131071, 2]);
w.endSequence();
w.endDocument();
w.addDocument([1, 2]);
w.close();
