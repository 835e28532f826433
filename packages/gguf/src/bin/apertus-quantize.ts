// The `apertus-quantize` executable: exit 2 for bad arguments, 1 (one line) when conversion fails.
import { runMain } from '@apertus/cli';
import { runQuantizeCli } from '../cli';

runMain('apertus-quantize', async () => {
  await runQuantizeCli(process.argv.slice(2));
  return 0;
});
