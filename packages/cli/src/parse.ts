// Parsing a command line with commander the way every Apertus command reports bad arguments.

import type { Command } from 'commander';
import { CliError } from './errors';

/**
 * Parse the user arguments `argv` with `cmd`; null when help or the version was printed.
 * Commander's errors become {@link CliError} naming the option (`--port`), else `(arguments)`.
 * `cmd` must have `exitOverride()` set, so commander throws instead of exiting.
 */
export function parseCommand(cmd: Command, argv: readonly string[]): Command | null {
  try {
    cmd.parse(argv as string[], { from: 'user' });
  } catch (e) {
    const code = commanderCode(e);
    if (code === null) throw e;
    if (code === 'commander.helpDisplayed' || code === 'commander.version' || code === 'commander.help') return null;
    const message = (e as Error).message.replace(/^error: /, '');
    const m = /--[a-z][a-z-]*/.exec(message);
    // "option '--port <port>' argument '99999' is invalid. must be …": the parser's own words suffice.
    const own = code === 'commander.invalidArgument' ? /is invalid\. (.+)$/s.exec(message)?.[1] : undefined;
    throw new CliError(m ? m[0] : '(arguments)', own ?? message);
  }
  return cmd;
}

/** Commander's error code (`commander.unknownOption`…) of `e`, else null. By its code, not its class: the caller's commander may be another copy. */
export function commanderCode(e: unknown): string | null {
  const code = (e as { code?: unknown } | null)?.code;
  return e instanceof Error && typeof code === 'string' && code.startsWith('commander.') ? code : null;
}
