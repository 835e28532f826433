// The `apertus-serve` executable: exit code 2 for bad arguments, 1 when the model or the device cannot be had.
import { runServeCli } from '../cli';
import { BackendError } from '@apertus/tensor';
import { CliError } from '../errors';

runServeCli(process.argv.slice(2), { handleSignals: true }).then(
  (server) => {
    // The reason was already printed by runServeCli.
    server?.ready.catch(() => server.close({ mode: 'cancel' }).then(() => process.exit(1)));
  },
  (e: unknown) => {
    process.stderr.write(`apertus-serve: ${e instanceof CliError || e instanceof BackendError ? e.message : e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(e instanceof CliError ? 2 : 1);
  },
);
