import { defineConfig } from 'tsup';
import { appBuild } from '@apertus/tsup-config';

// The command line (dist/cli.js, executable).
export default defineConfig(appBuild());
