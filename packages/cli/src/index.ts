/**
 * @apertus/cli — the command-line conventions shared by every Apertus command: one definition per
 * common flag (`--model`, `--threads`, `--device`, `--port`, `--host`, `--ctx`, sampling…), value
 * parsers with one message shape, commander errors as {@link CliError}, and the exit statuses
 * (0 done, 1 failed, 2 bad arguments) with errors printed as one line.
 * @packageDocumentation
 */
export { CliError } from './errors';
export { FLAGS, MAX_THREADS, flag, applyThreads, type FlagName, type FlagSpec } from './flags';
export { integerValue, numberValue, portValue, collectValues } from './values';
export { command, parseCommand, commanderCode, helpShown, toCliError } from './parse';
export { runMain, reportFailure, exitStatus, isUnexpected } from './main';
