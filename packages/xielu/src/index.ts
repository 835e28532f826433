/**
 * @apertus/xielu — the xIELU activation (Huang et al.) as Apertus uses it, with trainable
 * alpha_p/alpha_n, as an @apertus/tensor op with hand-written backward.
 * @packageDocumentation
 */
export { xielu, initXielu, type XieluParams, type XieluInit } from './xielu';
export { xieluValue, xieluGrads, softplus, sigmoid, type XieluGrads } from './math';
