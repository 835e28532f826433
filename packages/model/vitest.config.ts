import { apertusProject } from '@apertus/vitest-preset';

// Several tests start PyTorch (the Python peers): importing torch alone took over a minute on a
// loaded 2-core machine, so every test here gets 300 s.
export default apertusProject(import.meta.dirname, { test: { testTimeout: 300_000 } });
