import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: ['packages/*', 'apps/*', 'tooling/pack', 'tooling/browser', 'tooling/bench'],
    reporters: ['default'],
  },
});
