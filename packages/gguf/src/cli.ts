// `apertus-quantize --model <hf-dir> --out <file.gguf> [--type F32|BF16|Q8_0|Q4_K]`. The shared
// flags are @apertus/cli's; the older positional form `apertus-quantize <hf-dir> <out.gguf>` is
// still accepted (deprecated: a warning says so).
import fs from 'node:fs';
import { CliError, flag, parseCommand } from '@apertus/cli';
import { Command, InvalidArgumentError } from 'commander';
import { convertCheckpoint, type QuantizeType } from './convert';

const TYPES: readonly QuantizeType[] = ['F32', 'BF16', 'Q8_0', 'Q4_K'];

/** The `apertus-quantize` command (flags and help). */
export function quantizeCommand(): Command {
  return new Command('apertus-quantize')
    .description('Convert a Hugging Face Apertus checkpoint directory to GGUF (llama.cpp, Ollama, node-llama-cpp).')
    .addOption(flag('model', { help: 'checkpoint directory (config.json, model.safetensors, tokenizer.json)' }))
    .addOption(flag('out', { help: 'the .gguf file to write' }))
    .option('--type <type>', `storage of the matrices: ${TYPES.join(', ')}`, (v: string) => {
      const t = v.toUpperCase() as QuantizeType;
      if (!TYPES.includes(t)) throw new InvalidArgumentError(`expected one of ${TYPES.join(', ')}`);
      return t;
    }, 'Q8_0' as QuantizeType)
    .argument('[model-dir]', 'deprecated: the checkpoint directory (use --model)')
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
  const [posDir, posOut] = program.args as [string | undefined, string | undefined];
  if (posDir !== undefined) {
    if (o.model !== undefined || o.out !== undefined) throw new CliError('--model', 'give the checkpoint and the output either as --model/--out or positionally, not both');
    warn('apertus-quantize: warning: positional <model-dir> <out> are deprecated; use --model DIR --out FILE');
  }
  const dir = o.model ?? posDir;
  const out = o.out ?? posOut;
  if (dir === undefined) throw new CliError('--model', 'the checkpoint directory is required (--model DIR)');
  if (out === undefined) throw new CliError('--out', 'the output file is required (--out FILE.gguf)');
  const started = Date.now();
  const types = convertCheckpoint(dir, out, o.type);
  const counts = new Map<string, number>();
  for (const t of types.values()) counts.set(t, (counts.get(t) ?? 0) + 1);
  log(`${out}: ${(fs.statSync(out).size / 2 ** 20).toFixed(1)} MiB, ${types.size} tensors (${[...counts].map(([t, n]) => `${n} ${t}`).join(', ')}) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return out;
}
