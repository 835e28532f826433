// The `apertus-generate` executable: exit 0, 1 (the model cannot be loaded, or generation failed), 2 (bad arguments).
import { runMain } from '@apertus/cli';
import { runGenerate } from '../generate';

runMain('apertus-generate', () => runGenerate(process.argv.slice(2), { input: process.stdin, output: process.stdout, error: process.stderr }));
