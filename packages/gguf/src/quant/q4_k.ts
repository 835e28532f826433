// Re-export: the Q4_K block format lives in @apertus/tensor's dtypes.
export { scaleMinK4 } from '@apertus/tensor';
