import fs from 'node:fs';
import { transform } from 'esbuild';
const pkg = process.argv[2];
const md = fs.readFileSync(`packages/${pkg}/README.md`, 'utf8');
const m = /^```(?:ts|typescript|js)[ \t]*\n([\s\S]*?)^```[ \t]*$/m.exec(md);
const out = (await transform(m[1], { loader: 'ts', format: 'esm', target: 'node20' })).code;
fs.writeFileSync(`tooling/pack/.example-${pkg}.mjs`, out);
