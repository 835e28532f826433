import { describe, expect, test } from 'vitest';
import { CliError } from './errors';
import { FLAGS, flag } from './flags';
import { exitStatus, isUnexpected, reportFailure } from './main';
import { command, parseCommand } from './parse';
import { integerValue, numberValue, portValue } from './values';

describe('value parsers', () => {
  test('integers: decimal digits in range, anything else named with the value', () => {
    expect(portValue('0')).toBe(0);
    expect(portValue('65535')).toBe(65535);
    for (const bad of ['99999', '-1', '80.5', '1e3', '0x50', '', ' ', 'eighty']) expect(() => portValue(bad)).toThrow(/^must be an integer in \[0, 65535\], got/);
    expect(integerValue(-5, 5)('-5')).toBe(-5);
    expect(() => integerValue(1, Number.MAX_SAFE_INTEGER)('9007199254740993')).toThrow(/2\^53 - 1/);
  });

  test('numbers: finite, in range, open lower end when asked', () => {
    const topP = numberValue(0, 1, { openMin: true });
    expect(topP('0.5')).toBe(0.5);
    expect(topP('1')).toBe(1);
    for (const bad of ['0', '1.01', 'NaN', 'Infinity', '1e999', '']) expect(() => topP(bad)).toThrow(/^must be a number in \(0, 1\]/);
  });
});

describe('parseCommand', () => {
  const cmd = () => command('x').configureOutput({ writeOut: () => {}, writeErr: () => {}, outputError: () => {} }).addOption(flag('port', { defaultValue: 8080 })).addOption(flag('model', { required: true }));

  test('shared flags parse and check their values', () => {
    expect(parseCommand(cmd(), ['-m', 'dir', '--port', '9000'])!.opts()).toEqual({ model: 'dir', port: 9000 });
    expect(parseCommand(cmd(), ['--model', 'dir'])!.opts().port).toBe(8080);
  });

  test('commander errors become CliError naming the flag; help returns null', () => {
    const e = (() => { try { parseCommand(cmd(), ['-m', 'd', '--port', '99999']); } catch (x) { return x; } })();
    expect(e).toBeInstanceOf(CliError);
    expect((e as CliError).option).toBe('--port');
    expect((e as CliError).message).toBe("--port: must be an integer in [0, 65535], got '99999'");
    expect(() => parseCommand(cmd(), ['--port', '1'])).toThrow(/--model/);
    expect(() => parseCommand(cmd(), ['-m', 'd', '--nope'])).toThrow(CliError);
    const device = command('x').configureOutput({ writeErr: () => {}, outputError: () => {} }).addOption(flag('device'));
    expect(() => parseCommand(device, ['--device', 'tpu'])).toThrow("--device: 'tpu' is invalid: allowed choices are cpu, webgpu.");
    expect(parseCommand(cmd(), ['--help'])).toBeNull();
  });

  test('every shared flag has a long name, and no two share a short alias', () => {
    const shorts = new Map<string, string>();
    for (const [name, spec] of Object.entries(FLAGS)) {
      const m = /^(?:(-[a-zA-Z]), )?(--[a-z][a-z-]*)/.exec(spec.flags);
      expect(m, name).not.toBeNull();
      if (m![1]) {
        expect(shorts.get(m![1]), `${m![1]} is ${shorts.get(m![1])} and ${m![2]}`).toBeUndefined();
        shorts.set(m![1], m![2]!);
      }
    }
  });
});

describe('exit statuses and one-line errors', () => {
  test('bad arguments exit 2, failures 1; only unexpected errors print a stack', () => {
    const lines: string[] = [];
    expect(reportFailure('apertus-x', new CliError('--port', 'must be an integer'), (t) => lines.push(t))).toBe(2);
    const inUse = Object.assign(new Error('listen EADDRINUSE: address already in use 127.0.0.1:8080'), { code: 'EADDRINUSE' });
    expect(reportFailure('apertus-x', inUse, (t) => lines.push(t))).toBe(1);
    expect(lines).toEqual(['apertus-x: --port: must be an integer\n', 'apertus-x: listen EADDRINUSE: address already in use 127.0.0.1:8080\n']);
    class TypedError extends Error {}
    expect(isUnexpected(new TypedError('x'))).toBe(false);
    expect(isUnexpected(new TypeError('x'))).toBe(true);
    const more: string[] = [];
    expect(reportFailure('apertus-x', new TypeError('boom'), (t) => more.push(t))).toBe(1);
    expect(more).toHaveLength(2);
    expect(more[1]).toMatch(/^TypeError: boom\n\s+at /);
    expect(exitStatus(new TypedError('x'), (e) => e instanceof TypedError)).toBe(2);
  });
});
