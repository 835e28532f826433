// Parsing a command line with commander the way the Apertus commands report bad arguments.

import type { Command } from 'commander';
import { CliError } from './errors';

/**
 * Parse the user arguments `argv` with `cmd`; null when help or the version was printed.
 * Commander's errors become {@link CliError} naming the option (`--port`), else `(arguments)`.
 */
export function parseCommand(cmd: Command, argv: readonly string[]): Command | null {
  try {
    cmd.parse(argv as string[], { from: 'user' });
  } catch (e) {
    // By its code, not its class: the caller's commander may be another copy than this package's.
    const code = (e as { code?: unknown }).code;
    if (e instanceof Error && typeof code === 'string' && code.startsWith('commander.')) {
      if (code === 'commander.helpDisplayed' || code === 'commander.version' || code === 'commander.help') return null;
      const m = /--[a-z][a-z-]*/.exec(e.message);
      throw new CliError(m ? m[0] : '(arguments)', e.message.replace(/^error: /, ''));
    }
    throw e;
  }
  return cmd;
}
