// The `apertus-generate` executable.
import { CliError } from '@apertus/serve/engine';
import { runGenerate } from '../generate';

runGenerate(process.argv.slice(2), { input: process.stdin, output: process.stdout, error: process.stderr }).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`apertus-generate: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(e instanceof CliError ? 2 : 1);
  },
);
