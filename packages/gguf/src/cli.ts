// `apertus-quantize <model> <out.gguf> [--type Q4_K_M|Q5_K_M|Q6_K|Q8_0|BF16|F16|F32]`: <model> as
// every app takes `--model` (a model directory, a run directory, a Hub id; @apertus/hub resolves
// it), the types as llama-quantize names its mixes.
import { Command, InvalidArgumentError } from 'commander';
import fs from 'node:fs';
import { MODEL_SPEC_HELP, resolveModel, withDownloadDisplay } from '@apertus/hub';
import { convertCheckpoint, QUANTIZE_TYPES, type QuantizeType } from './convert';
import { GgufWriteError } from './errors';

const TYPES = QUANTIZE_TYPES;

/** Run the converter with command-line arguments; resolves to the output path. */
export async function runQuantizeCli(argv: readonly string[], log: (line: string) => void = (l) => process.stdout.write(l + '\n')): Promise<string> {
  const program = new Command('apertus-quantize')
    .description('Convert a Hugging Face Apertus checkpoint to GGUF (llama.cpp, Ollama, node-llama-cpp).')
    .argument('<model>', MODEL_SPEC_HELP)
    .argument('<out>', 'output .gguf file')
    .option('--type <type>', `storage of the matrices, as llama-quantize names it: ${TYPES.join(', ')}`, (v: string) => {
      const t = v.toUpperCase() as QuantizeType;
      if (!TYPES.includes(t)) throw new InvalidArgumentError(`expected one of ${TYPES.join(', ')}`);
      return t;
    }, 'Q8_0' as QuantizeType)
    .exitOverride()
    .configureOutput({ writeOut: log, writeErr: (s) => process.stderr.write(s) });
  await program.parseAsync(argv, { from: 'user' });
  const [spec, out] = program.args as [string, string];
  const type = program.opts<{ type: QuantizeType }>().type;
  const started = Date.now();
  const model = await withDownloadDisplay(process.stderr, (onProgress) => resolveModel(spec, { onProgress }));
  if (model.format === 'gguf') throw new GgufWriteError('is a GGUF file already: the converter reads a Hugging Face checkpoint (config.json + model.safetensors)', { file: model.path });
  const types = convertCheckpoint(model.path, out, type, model.name);
  const counts = new Map<string, number>();
  for (const t of types.values()) counts.set(t, (counts.get(t) ?? 0) + 1);
  log(`${out}: ${(fs.statSync(out).size / 2 ** 20).toFixed(1)} MiB, ${types.size} tensors (${[...counts].map(([t, n]) => `${n} ${t}`).join(', ')}) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return out;
}
