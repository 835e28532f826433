// The `apertus-chat` executable.
import { CliError } from '@apertus/serve/engine';
import { runChat } from '../chat';

runChat(process.argv.slice(2), {
  input: process.stdin,
  output: process.stdout,
  error: process.stderr,
  color: process.stdout.isTTY === true,
  terminal: process.stdin.isTTY === true && process.stdout.isTTY === true,
}).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`apertus-chat: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(e instanceof CliError ? 2 : 1);
  },
);
