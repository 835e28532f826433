import type { F32 } from '../../arrays';

/** Elementwise functions y = f(x). */
export type UnaryOp = 'neg' | 'exp' | 'log' | 'expm1' | 'log1p' | 'softplus' | 'sigmoid' | 'silu' | 'tanh' | 'sqrt' | 'rsqrt' | 'square' | 'abs' | 'relu';

/** Elementwise functions of two broadcast operands. */
export type BinaryOp = 'add' | 'sub' | 'mul' | 'div' | 'maximum' | 'minimum' | 'pow';
