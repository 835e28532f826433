#!/usr/bin/env node
// The `apertus-quantize` command. npm links a bin at install time, before anything is built, so in
// the monorepo the link points at this file, which runs the built program.
import '../dist/bin/apertus-quantize.js';
