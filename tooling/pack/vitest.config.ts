import { apertusProject } from '@apertus/vitest-preset';

// Packing, installing and running the examples takes minutes on 2 cores.
export default apertusProject(import.meta.dirname, { test: { testTimeout: 600_000, hookTimeout: 900_000 } });
