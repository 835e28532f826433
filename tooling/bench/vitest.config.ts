import { apertusProject } from '@apertus/vitest-preset';

export default apertusProject(import.meta.dirname, { test: { include: ['src/**/*.test.mjs'] } });
