#!/usr/bin/env node
// The `apertus-pretrain` command. npm links a bin at install time, before anything is built, so the
// link points at this file, which runs the built program (`npm start` or `npm run build` builds it).
import '../dist/cli.js';
