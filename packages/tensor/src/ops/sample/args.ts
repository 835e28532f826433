/** How one row's token is chosen: greedy for temperature 0, else a draw with `u` uniform in [0, 1). */
export interface SampleParams {
  readonly temperature: number;
  /** Keep the k most likely (0: all). */
  readonly topK: number;
  /** Keep the smallest prefix of probability ≥ p (1: all). */
  readonly topP: number;
  /** Drop probabilities below minP × the largest (0: none). */
  readonly minP: number;
  /** The draw's uniform number. */
  readonly u: number;
}
