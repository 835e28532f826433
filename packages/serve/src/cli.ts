// `apertus-serve --model DIR [--port 8080] [--host 127.0.0.1] [--threads N] [--device cpu] [--ctx N] …`
// The shared flags (`--model`, `--threads`, `--device`, `--port`, `--host`, `--ctx`, `--max-tokens`)
// come from @apertus/cli. The server starts listening first and loads the checkpoint afterwards,
// so /health answers 503 with the load's progress while the weights load.

import fs from 'node:fs';
import path from 'node:path';
import { applyThreads, CliError, collectValues, flag, integerValue, parseCommand } from '@apertus/cli';
import { MODEL_SPEC_HELP, withDownloadDisplay } from '@apertus/hub';
import { describeDevice, useDevice, type Device } from '@apertus/tensor';
import { Command, Option } from 'commander';
import { EngineError } from './errors';
import { loadServedModel } from './load';
import { createServer, type ApertusServer } from './server';

/** Where the CLI writes (defaults: process.stdout / process.stderr). */
export interface CliIo {
  /** Normal output. */
  out?: (text: string) => void;
  /** Diagnostics. */
  err?: (text: string) => void;
}

/** Options of {@link runServeCli} beyond argv. */
export interface ServeCliOptions extends CliIo {
  /** Install SIGINT/SIGTERM handlers: first signal finishes in-flight streams, a second cancels them. Default false. */
  handleSignals?: boolean;
}

/** `--cors-origin` values: `*` or `scheme://host[:port]` exactly (no path, no trailing slash). */
function checkOrigin(o: string): string {
  if (o === '*') return o;
  let u: URL | null = null;
  try {
    u = new URL(o);
  } catch {
    // reported below
  }
  if (!u || u.origin === 'null' || u.origin !== o.replace(/\/$/, '').toLowerCase()) throw new CliError('--cors-origin', `'${o}' is not an origin like https://app.example.com:3000 (or *)`);
  return u.origin;
}

/** The `apertus-serve` command (flags and help), for parsing and for `--help`. */
export function serveCommand(): Command {
  const count = (min = 1) => integerValue(min, 2 ** 31 - 1);
  return new Command('apertus-serve')
    .description('OpenAI-compatible server for an Apertus model (HTTP + SSE + WebSocket, continuous batching).')
    .addOption(flag('model', { required: true, help: MODEL_SPEC_HELP }))
    .addOption(flag('port', { defaultValue: 8080 }))
    .addOption(flag('host', { defaultValue: '127.0.0.1' }))
    .addOption(flag('threads'))
    .addOption(flag('device', { defaultValue: 'cpu' }))
    .addOption(flag('ctx'))
    .addOption(flag('maxTokens', { help: 'largest max_tokens a request may ask for, and the default (default: the context length)' }))
    .option('--api-key <key>', 'require Authorization: Bearer <key> (default: $APERTUS_API_KEY)')
    .option('--name <id>', "model id reported to clients (default: the checkpoint's name); requests may name any model")
    .option('--max-queue <n>', 'requests waiting for a slot before 429', count(0), 64)
    .option('--max-batch <n>', 'sequences decoded together', count(), 8)
    .option('--max-body <bytes>', 'request body limit (413 above it)', count(), 1024 * 1024)
    .option('--max-connections <n>', 'open connections at once; more are answered 503 and closed', count(), 256)
    .option('--prefill-chunk <n>', 'prompt tokens prefilled per step', count(), 512)
    .option('--prefix-cache <MiB>', 'memory cap of the prefix cache (KV of earlier prompts and replies reused by later requests); default: the weights\' size, at most an eighth of the machine\'s memory', count())
    .option('--no-prefix-cache', 'do not reuse KV across requests')
    .addOption(new Option('--pooling <how>', '/v1/embeddings: mean of the final hidden states, or the last token\'s').choices(['mean', 'last']).default('mean'))
    .addOption(new Option('--kv-cache-type <t>', "KV cache elements: 'f32', or 'f16' (half the memory, as llama.cpp keeps it; cpu device)").choices(['f32', 'f16']).default('f32'))
    .addOption(new Option('--precision <p>', "weights in memory: 'auto' (bf16 matrices as stored) or 'f32'").choices(['auto', 'f32']).default('auto'))
    .option('--cors-origin <origin>', 'allow browser calls from this origin (repeatable; * for any). Default: same origin only', collectValues, [])
    .option('--allowed-host <name>', 'accept this Host name while bound to loopback (repeatable; DNS-rebinding protection)', collectValues, [])
    .option('--adapter <dir>', 'PEFT LoRA adapter (adapter_config.json, adapter_model.safetensors) merged into the weights at load')
    .option('--no-web', 'do not serve the chat page at /')
    .option('--studio <dir>', 'serve the built studio app (apps/studio/dist) under /studio, cross-origin isolated')
    .addOption(flag('quiet', { help: 'do not log requests' }))
    .exitOverride();
}

interface ServeFlags {
  model: string; port: number; host: string; threads?: number; device: Device; ctx?: number; maxTokens?: number;
  apiKey?: string; name?: string; maxQueue: number; maxBatch: number; maxBody: number; maxConnections: number; prefillChunk: number;
  prefixCache?: number | boolean; kvCacheType: 'f32' | 'f16'; pooling: 'mean' | 'last'; precision: 'auto' | 'f32'; corsOrigin: string[]; allowedHost: string[];
  adapter?: string; web: boolean; studio?: string; quiet?: boolean;
}

/**
 * Parse `apertus-serve` arguments (without the node/script prefix), start the server and load
 * the model. Resolves with the listening server (the model may still be loading; see `ready`).
 * Throws CliError for bad arguments and ListenError when the address cannot be had; `--help`
 * prints and resolves with null.
 */
export async function runServeCli(argv: readonly string[], options: ServeCliOptions = {}): Promise<ApertusServer | null> {
  const out = options.out ?? ((s: string) => process.stdout.write(s));
  const err = options.err ?? ((s: string) => process.stderr.write(s));
  const program = serveCommand().configureOutput({ writeOut: out, writeErr: err, outputError: () => {} });
  if (!parseCommand(program, argv)) return null;
  const o = program.opts<ServeFlags>();
  const corsOrigins = o.corsOrigin.map(checkOrigin);
  if (o.studio !== undefined && !fs.existsSync(path.join(o.studio, 'index.html'))) throw new CliError('--studio', `${o.studio} has no index.html (build the studio first: npm run build -w apps/studio)`);
  const apiKey = o.apiKey ?? process.env.APERTUS_API_KEY ?? null;
  applyThreads(o.threads);
  // Before listening: a missing GPU is an error at start-up (WebgpuUnavailableError), not a 503.
  const device = await useDevice(o.device);
  let listening!: () => void;
  const listened = new Promise<void>((r) => (listening = r));
  const onWarning = (m: string) => err(`[apertus-serve] warning: ${m}\n`);
  const log = o.quiet ? undefined : (line: string) => err(`[apertus-serve] ${line}\n`);
  const server = createServer({
    // A run directory, a GGUF file or a Hub id (downloaded with a progress display) as every app accepts them.
    model: (onLoadProgress) => listened.then(() => withDownloadDisplay(process.stderr, (onProgress) => loadServedModel(o.model, {
      precision: o.precision, onWarning, onProgress, onLoadProgress,
      ...(o.name !== undefined ? { name: o.name } : {}), ...(o.adapter !== undefined ? { adapter: o.adapter } : {}),
    }))),
    apiKey, maxQueue: o.maxQueue, maxBatch: o.maxBatch, maxBodyBytes: o.maxBody, maxConnections: o.maxConnections, prefillChunk: o.prefillChunk, kvCacheType: o.kvCacheType, webPage: o.web,
    corsOrigins, allowedHosts: o.allowedHost, embeddingPooling: o.pooling,
    prefixCacheBytes: o.prefixCache === false ? null : typeof o.prefixCache === 'number' ? o.prefixCache * 2 ** 20 : 'auto',
    ...(o.maxTokens !== undefined ? { maxTokens: o.maxTokens } : {}),
    ...(o.ctx !== undefined ? { contextLength: o.ctx } : {}),
    ...(o.studio !== undefined ? { studioDir: o.studio } : {}),
    ...(log ? { log } : {}),
  });
  const url = await server.listen(o.port, o.host);
  listening();
  out(`apertus-serve listening on ${url} (loading ${o.model} on ${describeDevice(device)})\n`);
  if (o.host !== '127.0.0.1' && o.host !== 'localhost' && o.host !== '::1' && !apiKey) err('[apertus-serve] warning: bound to a non-local address without --api-key\n');
  server.ready.then(
    (m) => out(`model '${m.name}' ready at ${url}/v1\n`),
    // Without --quiet the server's log already said why.
    (e: Error) => {
      if (o.quiet) err(`[apertus-serve] cannot load ${o.model}: ${e.message}\n`);
    },
  );
  if (options.handleSignals) {
    let signals = 0;
    const onSignal = (sig: string) => {
      signals++;
      if (signals === 1) {
        err(`[apertus-serve] ${sig}: finishing in-flight requests (send it again to cancel them)\n`);
        server.close({ mode: 'finish' }).then(() => process.exit(0), () => process.exit(1));
      } else {
        err(`[apertus-serve] ${sig}: cancelling in-flight requests\n`);
        server.scheduler?.cancelAll(new EngineError('shutdown', 'the server is shutting down'));
      }
    };
    process.on('SIGINT', () => onSignal('SIGINT'));
    process.on('SIGTERM', () => onSignal('SIGTERM'));
  }
  return server;
}
