import { describe, expect, test } from 'vitest';
import { ShapeError } from '../errors';
import { adamwUpdate, ademamixUpdate, scaleBy, scaleInPlace, sumSquares } from './optimizer';

describe('optimizer updates (reference backend)', () => {
  test('sumSquares adds Σx² to acc in double; scaleBy scales in place or into out (and so does its deprecated alias scaleInPlace)', () => {
    const acc = Float32Array.of(0.5), x = Float32Array.of(1, -2, 3);
    sumSquares(x, acc, acc);
    expect(acc[0]).toBe(14.5);
    const out = new Float32Array(3);
    scaleBy(x, 3, out);
    expect(Array.from(out)).toEqual([3, -6, 9]);
    scaleBy(x, 0.5);
    expect(Array.from(x)).toEqual([0.5, -1, 1.5]);
    scaleInPlace(x, -2);
    expect(Array.from(x)).toEqual([-1, 2, -3]);
  });

  test('bad lengths give a ShapeError naming the op and the array, and change nothing', () => {
    const param = Float32Array.of(1, 2), out = new Float32Array(2);
    expect(() => sumSquares(param, null, out)).toThrow(new ShapeError('sumSquares: acc and out hold one value each'));
    expect(() => adamwUpdate({ param, grad: new Float32Array(3), m: new Float32Array(2), v: new Float32Array(2) } as never)).toThrow(/adamwUpdate: grad has 3 elements, param has 2/);
    expect(() => ademamixUpdate({ param, grad: new Float32Array(2), m1: null, m2: new Float32Array(1), nu: new Float32Array(2) } as never)).toThrow(/ademamixUpdate: m2 has 1 elements, param has 2/);
    expect(Array.from(param)).toEqual([1, 2]);
  });
});
