// Flag value parsers: a string from the command line to a checked number, or commander's
// InvalidArgumentError with one message shape for every command (parseCommand prefixes the flag:
// "--port: must be an integer in [0, 65535], got '99999'").

import { InvalidArgumentError } from 'commander';

/** An integer flag value in [min, max] (decimal digits, an optional sign; no `1e3`, no `0x10`). */
export function integerValue(min: number, max: number): (v: string) => number {
  return (v: string) => {
    const s = v.trim();
    const n = Number(s);
    if (!/^[+-]?\d+$/.test(s) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`must be an integer in [${min}, ${max === Number.MAX_SAFE_INTEGER ? '2^53 - 1' : max}], got '${v}'`);
    }
    return n;
  };
}

/** A finite number flag value in [min, max] (`(min, max]` when `openMin`). */
export function numberValue(min: number, max: number, { openMin = false } = {}): (v: string) => number {
  return (v: string) => {
    const n = Number(v.trim());
    if (v.trim() === '' || !Number.isFinite(n) || n < min || n > max || (openMin && n === min)) {
      throw new InvalidArgumentError(`must be a number in ${openMin ? '(' : '['}${min}, ${max}], got '${v}'`);
    }
    return n;
  };
}

/** A TCP port: an integer in [0, 65535] (0 lets the system pick a free one). */
export const portValue: (v: string) => number = integerValue(0, 65535);

/** Collects a repeatable flag's values into a list. */
export function collectValues(v: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), v];
}
