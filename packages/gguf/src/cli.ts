// `apertus-quantize --model <model> --out <file.gguf> [--type Q4_K_M|Q5_K_M|Q6_K|Q8_0|BF16|F16|F32]`:
// --model as every app takes it (a model directory, a run directory, a Hub id; @apertus/hub
// resolves it), the shared flags @apertus/cli's, the types as llama-quantize names its mixes. The
// older positional form `apertus-quantize <model> <out.gguf>` is still accepted (deprecated: a
// warning says so).
import fs from 'node:fs';
import { CliError, flag, parseCommand } from '@apertus/cli';
import { MODEL_SPEC_HELP, resolveModel, withDownloadDisplay } from '@apertus/hub';
import { Command, InvalidArgumentError } from 'commander';
import { convertCheckpoint, QUANTIZE_TYPES, type QuantizeType } from './convert';
import { GgufWriteError } from './errors';

const TYPES = QUANTIZE_TYPES;

/** The `apertus-quantize` command (flags and help). */
export function quantizeCommand(): Command {
  return new Command('apertus-quantize')
    .description('Convert a Hugging Face Apertus checkpoint to GGUF (llama.cpp, Ollama, node-llama-cpp).')
    .addOption(flag('model', { help: MODEL_SPEC_HELP }))
    .addOption(flag('out', { help: 'the .gguf file to write' }))
    .option('--type <type>', `storage of the matrices, as llama-quantize names it: ${TYPES.join(', ')}`, (v: string) => {
      const t = v.toUpperCase() as QuantizeType;
      if (!TYPES.includes(t)) throw new InvalidArgumentError(`expected one of ${TYPES.join(', ')}`);
      return t;
    }, 'Q8_0' as QuantizeType)
    .argument('[model]', 'deprecated: the model (use --model)')
    .argument('[out]', 'deprecated: the output file (use --out)')
    .exitOverride();
}

/**
 * Run the converter with command-line arguments; resolves to the output path, or null when the
 * help was printed. Throws CliError for bad arguments.
 */
export async function runQuantizeCli(argv: readonly string[], log: (line: string) => void = (l) => process.stdout.write(l + '\n'), warn: (line: string) => void = (l) => process.stderr.write(l + '\n')): Promise<string | null> {
  const program = quantizeCommand().configureOutput({ writeOut: log, writeErr: warn, outputError: () => {} });
  if (!parseCommand(program, argv)) return null;
  const o = program.opts<{ model?: string; out?: string; type: QuantizeType }>();
  const [posModel, posOut] = program.args as [string | undefined, string | undefined];
  if (posModel !== undefined) {
    if (o.model !== undefined || o.out !== undefined) throw new CliError('--model', 'give the model and the output either as --model/--out or positionally, not both');
    warn('apertus-quantize: warning: positional <model> <out> are deprecated; use --model MODEL --out FILE');
  }
  const spec = o.model ?? posModel;
  const out = o.out ?? posOut;
  if (spec === undefined) throw new CliError('--model', 'the model is required (--model MODEL)');
  if (out === undefined) throw new CliError('--out', 'the output file is required (--out FILE.gguf)');
  const started = Date.now();
  const model = await withDownloadDisplay(process.stderr, (onProgress) => resolveModel(spec, { onProgress }));
  if (model.format === 'gguf') throw new GgufWriteError('is a GGUF file already: the converter reads a Hugging Face checkpoint (config.json + model.safetensors)', { file: model.path });
  const types = convertCheckpoint(model.path, out, o.type, model.name);
  const counts = new Map<string, number>();
  for (const t of types.values()) counts.set(t, (counts.get(t) ?? 0) + 1);
  log(`${out}: ${(fs.statSync(out).size / 2 ** 20).toFixed(1)} MiB, ${types.size} tensors (${[...counts].map(([t, n]) => `${n} ${t}`).join(', ')}) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return out;
}
