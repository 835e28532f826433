/** Bad command-line arguments of an Apertus command: `option` names the flag at fault (`--port`), or `(arguments)`. */
export class CliError extends Error {
  constructor(
    /** The flag at fault (`--port`), or `(arguments)`. */
    readonly option: string,
    message: string,
  ) {
    super(`${option}: ${message}`);
    this.name = 'CliError';
  }
}
