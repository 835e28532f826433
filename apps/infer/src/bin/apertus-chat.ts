// The `apertus-chat` executable: exit 0, 1 (the model cannot be loaded, or generation failed), 2 (bad arguments).
import { runMain } from '@apertus/cli';
import { runChat } from '../chat';

runMain('apertus-chat', () => runChat(process.argv.slice(2), {
  input: process.stdin,
  output: process.stdout,
  error: process.stderr,
  color: process.stdout.isTTY === true,
  terminal: process.stdin.isTTY === true && process.stdout.isTTY === true,
}));
