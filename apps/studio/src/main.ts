// The studio page: wires the controls of index.html to the model worker (src/worker.ts), which
// loads, chats, trains and makes the checkpoint; the page shows the streamed text, the losses and
// the download links. Everything runs in this tab.

import { parseHubId } from '@apertus/hub';
import { svgLineChart } from '@apertus/trainer';
import type { ChatMessage } from '@apertus/tokenizer';
import { deviceNotices, wantsWebgpu, webgpuAdapter } from './device';
import type { CheckpointFile, ModelSource, StudioRequest, StudioResponse, StudioResults } from './protocol';

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => document.getElementById(id) as T;

/** Default training text: Article 1 of the Universal Declaration of Human Rights in the Swiss languages and English. */
const UDHR_ARTICLE_1 = [
  'All human beings are born free and equal in dignity and rights. They are endowed with reason and conscience and should act towards one another in a spirit of brotherhood.',
  'Alle Menschen sind frei und gleich an Würde und Rechten geboren. Sie sind mit Vernunft und Gewissen begabt und sollen einander im Geist der Brüderlichkeit begegnen.',
  'Tous les êtres humains naissent libres et égaux en dignité et en droits. Ils sont doués de raison et de conscience et doivent agir les uns envers les autres dans un esprit de fraternité.',
  'Tutti gli esseri umani nascono liberi ed eguali in dignità e diritti. Essi sono dotati di ragione e di coscienza e devono agire gli uni verso gli altri in spirito di fratellanza.',
  'Tut ils umans naschan libers ed eguals en dignitad ed en dretgs. Els èn dotads cun raschun e conscienza e duain agir in vers l\'auter en spiert da fraternitad.',
].join('\n');

const query = new URLSearchParams(location.search);
/** Tokens per answer (`?max_tokens=N`, default 48). */
const MAX_TOKENS = Math.max(1, Number(query.get('max_tokens')) || 48);

const worker = new Worker(new URL('worker.js', import.meta.url), { type: 'module' });
let nextId = 1;
const pending = new Map<number, { resolve: (r: unknown) => void; reject: (e: Error) => void; progress: (m: StudioResponse) => void }>();
worker.onmessage = (e: MessageEvent<StudioResponse>) => {
  const m = e.data;
  const p = pending.get(m.id);
  if (p === undefined) return;
  if (m.type === 'done') { pending.delete(m.id); p.resolve(m.result); }
  else if (m.type === 'error') { pending.delete(m.id); p.reject(new Error(m.message)); }
  else p.progress(m);
};

/** Send a request to the worker; `progress` gets its streamed text or training steps. */
function ask<K extends StudioRequest['type']>(r: Omit<Extract<StudioRequest, { type: K }>, 'id'>, progress: (m: StudioResponse) => void = () => {}): Promise<StudioResults[K]> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve: resolve as (r: unknown) => void, reject, progress });
    worker.postMessage({ ...r, id });
  });
}

let loaded = false;
let packed = false;
const history: ChatMessage[] = [];

function status(text: string, state: 'idle' | 'busy' | 'done' | 'error'): void {
  const s = $('status');
  s.textContent = text;
  s.dataset['state'] = state;
  s.className = state === 'error' ? 'error' : '';
}

async function use(source: ModelSource): Promise<void> {
  const m = await ask<'load'>({ type: 'load', source }, (p) => {
    if (p.type === 'download') status(`downloading ${p.file}: ${(p.bytes / 1e6).toFixed(1)} of ${(p.total / 1e6).toFixed(1)} MB`, 'busy');
  });
  loaded = true;
  packed = m.packed;
  history.length = 0;
  $('chat-log').textContent = '';
  $('downloads').textContent = '';
  $('model-name').textContent = `${m.name} (${m.layers} layers, hidden ${m.hidden}, vocab ${m.vocab})`;
  status('model ready', 'done');
}

async function guarded(what: string, f: () => Promise<void>): Promise<void> {
  status(`${what}…`, 'busy');
  try {
    await f();
  } catch (e) {
    status(`${what} failed: ${e instanceof Error ? e.message : String(e)}`, 'error');
  }
}

async function send(): Promise<void> {
  const text = $<HTMLInputElement>('prompt').value.trim();
  if (text === '') return;
  $<HTMLInputElement>('prompt').value = '';
  history.push({ role: 'user', content: text });
  const log = $('chat-log');
  const user = document.createElement('div');
  user.className = 'user';
  user.textContent = `you: ${text}`;
  const answer = document.createElement('div');
  answer.className = 'assistant';
  answer.id = `answer-${history.length}`;
  log.append(user, answer);
  await guarded('generating', async () => {
    if (!loaded) await use({ kind: 'tiny', seed: 1 });
    const r = await ask<'chat'>({ type: 'chat', messages: history, maxTokens: MAX_TOKENS }, (m) => {
      if (m.type !== 'text') return;
      answer.textContent = `apertus: ${m.text}`;
      answer.dataset['tokens'] = String(m.tokens);
    });
    history.push({ role: 'assistant', content: r.text });
    $('chat-stats').textContent = `${r.tokens} tokens · first token ${r.firstTokenMs.toFixed(0)} ms · ${(r.tokens / (r.totalMs / 1000)).toFixed(1)} tokens/s`;
    $('chat-stats').dataset['tokens'] = String(r.tokens);
    $('chat-stats').dataset['ids'] = JSON.stringify(r.ids);
    $('chat-stats').dataset['firstTokenMs'] = r.firstTokenMs.toFixed(1);
    status('answered', 'done');
  });
}

/** Offer each checkpoint file for download through an object URL. */
function offer(files: CheckpointFile[]): void {
  const box = $('downloads');
  box.textContent = 'Download the checkpoint: ';
  for (const f of files) {
    const blob = new Blob([f.contents as BlobPart], { type: f.name.endsWith('.json') ? 'application/json' : 'application/octet-stream' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = f.name;
    a.textContent = `${f.name} (${(blob.size / 1024).toFixed(0)} KiB)`;
    box.append(a);
  }
}

async function train(): Promise<void> {
  if (loaded && packed) {
    status('training needs a model with float weights: this GGUF model keeps its matrices quantized (open a model directory, or make a new tiny model)', 'error');
    return;
  }
  const steps = Math.max(1, Number($<HTMLInputElement>('train-steps').value) || 20);
  const losses: number[] = [];
  $<HTMLButtonElement>('stop').disabled = false;
  await guarded('training', async () => {
    if (!loaded) await use({ kind: 'tiny', seed: 1 });
    const r = await ask<'train'>({ type: 'train', text: $<HTMLTextAreaElement>('train-text').value, settings: { steps, batchSize: 4, seqLength: 64, lr: 2e-3 } }, (m) => {
      if (m.type !== 'step') return;
      losses.push(m.loss);
      $('loss-values').textContent = `step ${m.step}/${steps} · loss ${m.loss.toFixed(4)} (first ${losses[0]!.toFixed(4)})`;
      $('loss-values').dataset['losses'] = JSON.stringify(losses);
      $('loss-plot').innerHTML = svgLineChart([{ name: 'training loss', color: '#1f77b4', points: losses.map((l, i) => [i + 1, l] as const) }], { title: 'training loss', xLabel: 'step', yLabel: 'loss', width: 520, height: 260 });
      status(`training: step ${m.step}/${steps}`, 'busy');
    });
    offer(r.files);
    status(`trained ${r.losses.length} steps`, 'done');
  });
  $<HTMLButtonElement>('stop').disabled = true;
}

/**
 * A URL of a model directory or .gguf file, or a Hub id `owner/name[@revision][:QUANT]` (from the
 * Hub at `?hub=<url>`, default huggingface.co, with the token typed in, for gated models).
 */
function sourceOf(value: string): ModelSource {
  if (parseHubId(value) === null) return { kind: 'url', url: new URL(value, location.href).href };
  const endpoint = query.get('hub');
  const token = $<HTMLInputElement>('hf-token').value.trim();
  return { kind: 'hub', id: value, ...(endpoint ? { endpoint } : {}), ...(token ? { token } : {}) };
}

async function start(): Promise<void> {
  $<HTMLTextAreaElement>('train-text').value = UDHR_ARTICLE_1;
  $('send').addEventListener('click', () => void send());
  $('prompt').addEventListener('keydown', (e) => { if (e.key === 'Enter') void send(); });
  $('train').addEventListener('click', () => void train());
  $('stop').addEventListener('click', () => void ask<'stop'>({ type: 'stop' }));
  $('new-tiny').addEventListener('click', () => void guarded('loading', () => use({ kind: 'tiny', seed: Date.now() % 1000 })));
  $('model-dir').addEventListener('change', () => {
    const files = [...($<HTMLInputElement>('model-dir').files ?? [])];
    const name = files[0]?.webkitRelativePath.split('/')[0] || 'picked directory';
    if (files.length > 0) void guarded('loading', () => use({ kind: 'dir', name, files }));
  });
  $('model-gguf').addEventListener('change', () => {
    const file = $<HTMLInputElement>('model-gguf').files?.[0];
    if (file) void guarded('loading', () => use({ kind: 'gguf', file }));
  });
  $('load-url').addEventListener('click', () => void guarded('loading', () => use(sourceOf($<HTMLInputElement>('model-url').value))));
  const probe = { isolated: globalThis.crossOriginIsolated === true, adapter: await webgpuAdapter(), forcedWasm: query.get('device') === 'wasm' };
  const d = await ask<'device'>({ type: 'device', webgpu: wantsWebgpu(probe) });
  $('device').textContent = d.label;
  $('device').dataset['webgpu'] = probe.adapter ?? '';
  for (const n of deviceNotices({ ...probe, webgpu: d.webgpu, webgpuError: d.reason })) {
    const li = document.createElement('li');
    li.textContent = n;
    $('notices').append(li);
  }
  const q = query.get('model');
  if (q) await guarded('loading', () => use(sourceOf(q)));
  document.body.dataset['ready'] = '1';
}

void start();
