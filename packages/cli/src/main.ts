// How every Apertus command ends: the exit status, and an error as one line naming the command.
//
//   0  done            1  the work failed (a file, a model, a port in use…)
//   2  bad arguments   (CliError, or a usage error the command recognises)
//
// Only an unexpected failure (a bare Error, TypeError… without a system error code) also prints its
// stack, for a bug report; typed errors and system errors (EADDRINUSE, ENOENT) are one line.

import { CliError } from './errors';
import { commanderCode, toCliError } from './parse';

const BUILT_IN: readonly Function[] = [Error, TypeError, RangeError, ReferenceError, SyntaxError];

/** True for an error worth a stack trace: a built-in class and no system error code. */
export function isUnexpected(e: unknown): boolean {
  if (!(e instanceof Error)) return true;
  return BUILT_IN.includes(e.constructor) && typeof (e as { code?: unknown }).code !== 'string';
}

/** Exit status of an error: 2 for bad arguments (CliError, commander's, or `usage(e)`), else 1. */
export function exitStatus(e: unknown, usage: (e: unknown) => boolean = () => false): number {
  return e instanceof CliError || commanderCode(e) !== null || usage(e) ? 2 : 1;
}

/** `name: message` (plus the stack of an unexpected error) on `write`; returns the exit status. Commander's errors are named by their option. */
export function reportFailure(name: string, e: unknown, write: (text: string) => void = (t) => process.stderr.write(t), usage?: (e: unknown) => boolean): number {
  e = toCliError(e) ?? e;
  const message = e instanceof Error ? e.message : String(e);
  write(`${name}: ${message.replace(/^error: /, '')}\n`);
  if (isUnexpected(e) && e instanceof Error && e.stack) write(`${e.stack}\n`);
  return exitStatus(e, usage);
}

/**
 * Run a command's `main`: its resolved number (default 0) becomes the exit status; a failure is
 * reported by {@link reportFailure} and the process exits with its status. A `main` that leaves
 * something running (a server) resolves with `null`: the process then lives on.
 */
export function runMain(name: string, main: () => Promise<number | null | void>, usage?: (e: unknown) => boolean): void {
  main().then(
    (code) => {
      if (code !== null) process.exitCode = code ?? 0;
    },
    (e: unknown) => process.exit(reportFailure(name, e, undefined, usage)),
  );
}
