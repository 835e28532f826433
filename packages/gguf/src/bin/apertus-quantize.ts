// The `apertus-quantize` executable: exit code 2 for bad arguments, 1 when conversion fails.
import { CommanderError } from 'commander';
import { runQuantizeCli } from '../cli';

runQuantizeCli(process.argv.slice(2)).catch((e: unknown) => {
  if (e instanceof CommanderError) process.exit(e.exitCode === 0 ? 0 : 2);
  process.stderr.write(`apertus-quantize: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
