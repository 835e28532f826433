// Parsing a command line with commander the way every Apertus command reports bad arguments.

import { Command } from 'commander';
import { CliError } from './errors';

/** A commander program that throws instead of exiting, so {@link parseCommand} can turn its errors into CliError. */
export function command(name: string, description = ''): Command {
  return new Command(name).description(description).exitOverride();
}

/**
 * Parse the user arguments `argv` with `cmd`; null when help or the version was printed.
 * Commander's errors become {@link CliError} naming the option (`--port`), else `(arguments)`.
 * `cmd` must have `exitOverride()` set, so commander throws instead of exiting.
 */
export function parseCommand(cmd: Command, argv: readonly string[]): Command | null {
  try {
    cmd.parse(argv as string[], { from: 'user' });
  } catch (e) {
    if (helpShown(e)) return null;
    throw toCliError(e) ?? e;
  }
  return cmd;
}

/** Commander's error code (`commander.unknownOption`…) of `e`, else null. By its code, not its class: the caller's commander may be another copy. */
export function commanderCode(e: unknown): string | null {
  const code = (e as { code?: unknown } | null)?.code;
  return e instanceof Error && typeof code === 'string' && code.startsWith('commander.') ? code : null;
}

/** True when `e` is commander telling that it printed the help or the version (exit 0). */
export function helpShown(e: unknown): boolean {
  const code = commanderCode(e);
  return code === 'commander.helpDisplayed' || code === 'commander.version' || code === 'commander.help';
}

/** A commander error as a {@link CliError} naming the option (`--port`), else `(arguments)`; null for anything else. */
export function toCliError(e: unknown): CliError | null {
  const code = commanderCode(e);
  if (code === null || helpShown(e)) return null;
  const message = (e as Error).message.replace(/^error: /, '');
  const m = /--[a-z][a-z-]*/.exec(message);
  // "option '--port <port>' argument '99999' is invalid. must be …": the parser's own words suffice
  // (they name the value); commander's choices check does not, so the value goes first.
  const invalid = code === 'commander.invalidArgument' ? /argument '(.*)' is invalid\. (.+)$/s.exec(message) : null;
  const own = invalid ? (invalid[2]!.startsWith('Allowed choices') ? `'${invalid[1]}' is invalid: ${invalid[2]!.replace(/^Allowed/, 'allowed')}` : invalid[2]!) : message;
  return new CliError(m ? m[0] : '(arguments)', own);
}
