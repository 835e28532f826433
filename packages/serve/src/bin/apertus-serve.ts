// The `apertus-serve` executable: exit 2 for bad arguments, 1 (one line) when the port, the
// device or the model cannot be had; otherwise it serves until a signal.
import { runMain } from '@apertus/cli';
import { runServeCli } from '../cli';

runMain('apertus-serve', async () => {
  const server = await runServeCli(process.argv.slice(2), { handleSignals: true });
  if (!server) return 0;
  // The reason was already printed by runServeCli.
  server.ready.catch(() => server.close({ mode: 'cancel' }).then(() => process.exit(1)));
  return null;
});
