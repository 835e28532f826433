import { describe, expect, test } from 'vitest';
import { ShapeError } from '../errors';
import { scaleBy } from './elementwise';
import { sumSquares } from './reduce';

describe('sumSquares and scaleBy (cpu)', () => {
  test('sumSquares adds Σx² to acc in double; scaleBy scales in place or into out', () => {
    const acc = Float32Array.of(0.5), x = Float32Array.of(1, -2, 3);
    sumSquares(x, acc, acc);
    expect(acc[0]).toBe(14.5);
    const out = new Float32Array(3);
    scaleBy(x, 3, out);
    expect(Array.from(out)).toEqual([3, -6, 9]);
    scaleBy(x, 0.5);
    expect(Array.from(x)).toEqual([0.5, -1, 1.5]);
  });

  test('bad lengths give a ShapeError naming the op, and change nothing', () => {
    const x = Float32Array.of(1, 2), out = new Float32Array(2);
    expect(() => sumSquares(x, null, out)).toThrow(new ShapeError('sumSquares: acc and out hold one value each'));
    expect(() => scaleBy(x, 2, new Float32Array(3))).toThrow(new ShapeError('scaleBy: out has 3 elements, x has 2'));
    expect(Array.from(x)).toEqual([1, 2]);
  });
});
