// llama.cpp itself as a reference: the ggml and llama libraries of node-llama-cpp's prebuilt
// linux-x64 binary, driven by test/ggml_reference.py through the Python peers.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { peerPython } from '@apertus/peers';

const require = createRequire(import.meta.url);

/** The directory of libggml-base.so, libllama.so… of node-llama-cpp's linux-x64 binary. */
export const LLAMA_LIB_DIR = path.join(path.dirname(require.resolve('@node-llama-cpp/linux-x64')), '..', 'bins', 'linux-x64');

/** Run test/ggml_reference.py with `args` (see its docstring). */
export function ggmlReference(...args: string[]): void {
  execFileSync(peerPython(), [path.join(import.meta.dirname, '../test/ggml_reference.py'), LLAMA_LIB_DIR, ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
}
