// The benchmarks' server: the built `apertus-serve` binary in its own process, on a free port.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** Start `apertus-serve --model dir --port 0 --quiet ...flags`; resolves with its base URL and process once the model is ready. */
export async function startServer(dir, flags) {
  const bin = path.join(here, '../dist/bin/apertus-serve.js');
  const child = spawn(process.execPath, [bin, '--model', dir, '--port', '0', '--quiet', ...flags], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const url = await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      const m = /ready at (http:\/\/[^\s]+)\/v1/.exec(out);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  return { url, child };
}
