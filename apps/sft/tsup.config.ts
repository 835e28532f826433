import { defineConfig } from 'tsup';
import { appBuild } from '@apertus/tsup-config';

// The library entry and the CLI (dist/cli.js, executable) in one ESM build.
export default defineConfig(appBuild());
