// `apertus-serve --model DIR [--port 8080] [--host 127.0.0.1] [--api-key KEY] [--max-queue N]
//  [--max-batch N] [--max-body BYTES] [--max-tokens N] [--ctx N] [--prefix-cache MiB] …`
// The server starts listening first and loads the checkpoint afterwards, so /health answers 503
// while the weights load.

import fs from 'node:fs';
import path from 'node:path';
import { MODEL_SPEC_HELP, withDownloadDisplay } from '@apertus/hub';
import { DEVICES, DEVICE_HELP, describeDevice, useDevice, type Device } from '@apertus/tensor';
import { Command, InvalidArgumentError, Option } from 'commander';
import { parseCommand } from './cli-args';
import { CliError, EngineError } from './errors';
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

function positiveInt(name: string, allowZero = false) {
  return (v: string): number => {
    const n = Number(v);
    if (!/^\d+$/.test(v.trim()) || !Number.isSafeInteger(n) || (!allowZero && n === 0)) throw new InvalidArgumentError(`${name} must be a ${allowZero ? 'non-negative' : 'positive'} integer`);
    return n;
  };
}

function collect(v: string, prev: string[]): string[] {
  return [...prev, v];
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

/**
 * Parse `apertus-serve` arguments (without the node/script prefix), start the server and load
 * the model. Resolves with the listening server (the model may still be loading; see `ready`).
 * Throws CliError for bad arguments; `--help` / `--version` print and resolve with null.
 */
export async function runServeCli(argv: readonly string[], options: ServeCliOptions = {}): Promise<ApertusServer | null> {
  const out = options.out ?? ((s: string) => process.stdout.write(s));
  const err = options.err ?? ((s: string) => process.stderr.write(s));
  const program = new Command('apertus-serve')
    .description('OpenAI-compatible server for an Apertus checkpoint directory (HTTP + SSE + WebSocket, continuous batching).')
    .requiredOption('-m, --model <model>', MODEL_SPEC_HELP)
    .option('-p, --port <port>', 'port (0 picks a free one)', positiveInt('--port', true), 8080)
    .option('--host <host>', 'address to bind (localhost only by default)', '127.0.0.1')
    .option('--api-key <key>', 'require Authorization: Bearer <key> (default: $APERTUS_API_KEY)')
    .option('--name <id>', "model id clients send (default: the checkpoint's name, or the Hub id)")
    .option('--max-queue <n>', 'requests waiting for a slot before 429', positiveInt('--max-queue', true), 64)
    .option('--max-batch <n>', 'sequences decoded together', positiveInt('--max-batch'), 8)
    .option('--max-body <bytes>', 'request body limit', positiveInt('--max-body'), 1024 * 1024)
    .option('--max-tokens <n>', 'largest max_tokens per request (default: the context length)', positiveInt('--max-tokens'))
    .option('--ctx <n>', 'context limit, prompt + output (default: max_position_embeddings)', positiveInt('--ctx'))
    .option('--prefill-chunk <n>', 'prompt tokens prefilled per step', positiveInt('--prefill-chunk'), 512)
    .option('--prefix-cache <MiB>', 'memory cap of the prefix cache (KV of earlier prompts and replies reused by later requests)', positiveInt('--prefix-cache'), 1024)
    .option('--no-prefix-cache', 'do not reuse KV across requests')
    .addOption(new Option('--device <device>', DEVICE_HELP).choices(DEVICES).default('cpu'))
    .option('--precision <p>', "weights in memory: 'auto' (bf16 matrices as stored) or 'f32'", 'auto')
    .option('--cors-origin <origin>', 'allow browser calls from this origin (repeatable; * for any). Default: same origin only', collect, [])
    .option('--allowed-host <name>', 'accept this Host name while bound to loopback (repeatable; DNS-rebinding protection)', collect, [])
    .option('--adapter <dir>', 'PEFT LoRA adapter (adapter_config.json, adapter_model.safetensors) merged into the weights at load')
    .option('--no-web', 'do not serve the chat page at /')
    .option('--studio <dir>', 'serve the built studio app (apps/studio/dist) under /studio, cross-origin isolated')
    .option('--quiet', 'do not log requests')
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: err, outputError: () => {} });
  if (!parseCommand(program, argv)) return null;
  const o = program.opts<{
    model: string; port: number; host: string; apiKey?: string; name?: string; maxQueue: number; maxBatch: number; maxBody: number;
    maxTokens?: number; ctx?: number; prefillChunk: number; prefixCache: number | false; device: Device; precision: string; adapter?: string; web: boolean; studio?: string; quiet?: boolean;
    corsOrigin: string[]; allowedHost: string[];
  }>();
  const corsOrigins = o.corsOrigin.map(checkOrigin);
  if (o.precision !== 'auto' && o.precision !== 'f32') throw new CliError('--precision', `must be 'auto' or 'f32', got '${o.precision}'`);
  if (o.studio !== undefined && !fs.existsSync(path.join(o.studio, 'index.html'))) throw new CliError('--studio', `${o.studio} has no index.html (build the studio first: npm run build -w apps/studio)`);
  const apiKey = o.apiKey ?? process.env.APERTUS_API_KEY ?? null;
  // Before listening: a missing GPU is an error at start-up (WebgpuUnavailableError), not a 503.
  const device = await useDevice(o.device);
  let listening!: () => void;
  const listened = new Promise<void>((r) => (listening = r));
  const onWarning = (m: string) => err(`[apertus-serve] warning: ${m}\n`);
  const model = listened.then(() => withDownloadDisplay(process.stderr, (onProgress) => loadServedModel(o.model, {
    precision: o.precision as 'auto' | 'f32', onWarning, onProgress, ...(o.name !== undefined ? { name: o.name } : {}), ...(o.adapter !== undefined ? { adapter: o.adapter } : {}),
  })));
  const log = o.quiet ? undefined : (line: string) => err(`[apertus-serve] ${line}\n`);
  const server = createServer({
    model, apiKey, maxQueue: o.maxQueue, maxBatch: o.maxBatch, maxBodyBytes: o.maxBody, prefillChunk: o.prefillChunk, webPage: o.web,
    corsOrigins, allowedHosts: o.allowedHost,
    ...(o.maxTokens !== undefined ? { maxTokens: o.maxTokens } : {}),
    ...(o.ctx !== undefined ? { contextLength: o.ctx } : {}),
    ...(o.studio !== undefined ? { studioDir: o.studio } : {}),
    ...(o.prefixCache !== false ? { prefixCacheBytes: o.prefixCache * 2 ** 20 } : {}),
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
