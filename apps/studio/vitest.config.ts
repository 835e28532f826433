import { apertusProject } from '@apertus/vitest-preset';

export default apertusProject(import.meta.dirname, { test: { testTimeout: 120_000, hookTimeout: 120_000 } });
