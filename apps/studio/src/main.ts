// The studio page: wires the controls of index.html to the model, chat, training and download
// modules. Everything runs in this tab.

import { svgLineChart } from '@apertus/trainer';
import type { ChatMessage } from '@apertus/tokenizer';
import { chatTurn } from './chat';
import { describeDevice } from './device';
import { modelFromGgufFile, modelFromGgufUrl } from './gguf-source';
import { checkpointLinks } from './download';
import { modelFromPicked, modelFromUrl, tinyModel, type StudioModel } from './model-source';
import { trainOnText } from './train';

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => document.getElementById(id) as T;

/** Default training text: Article 1 of the Universal Declaration of Human Rights in the Swiss languages and English. */
const UDHR_ARTICLE_1 = [
  'All human beings are born free and equal in dignity and rights. They are endowed with reason and conscience and should act towards one another in a spirit of brotherhood.',
  'Alle Menschen sind frei und gleich an Würde und Rechten geboren. Sie sind mit Vernunft und Gewissen begabt und sollen einander im Geist der Brüderlichkeit begegnen.',
  'Tous les êtres humains naissent libres et égaux en dignité et en droits. Ils sont doués de raison et de conscience et doivent agir les uns envers les autres dans un esprit de fraternité.',
  'Tutti gli esseri umani nascono liberi ed eguali in dignità e diritti. Essi sono dotati di ragione e di coscienza e devono agire gli uni verso gli altri in spirito di fratellanza.',
  'Tut ils umans naschan libers ed eguals en dignitad ed en dretgs. Els èn dotads cun raschun e conscienza e duain agir in vers l\'auter en spiert da fraternitad.',
].join('\n');

let current: StudioModel | null = null;
let stopRequested = false;
const history: ChatMessage[] = [];

function status(text: string, state: 'idle' | 'busy' | 'done' | 'error'): void {
  const s = $('status');
  s.textContent = text;
  s.dataset['state'] = state;
  s.className = state === 'error' ? 'error' : '';
}

function use(m: StudioModel): void {
  current = m;
  history.length = 0;
  $('chat-log').textContent = '';
  $('downloads').textContent = '';
  const c = m.model.config;
  $('model-name').textContent = `${m.name} (${c.num_hidden_layers} layers, hidden ${c.hidden_size}, vocab ${c.vocab_size})`;
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
  const m = current ?? (use(tinyModel(1)), current!);
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
    const r = await chatTurn(m, history, 48, (t, n) => {
      answer.textContent = `apertus: ${t}`;
      answer.dataset['tokens'] = String(n);
    });
    history.push({ role: 'assistant', content: r.text });
    $('chat-stats').textContent = `${r.tokens} tokens · first token ${r.firstTokenMs.toFixed(0)} ms · ${(r.tokens / (r.totalMs / 1000)).toFixed(1)} tokens/s`;
    $('chat-stats').dataset['tokens'] = String(r.tokens);
    $('chat-stats').dataset['firstTokenMs'] = r.firstTokenMs.toFixed(1);
    status('answered', 'done');
  });
}

async function train(): Promise<void> {
  const m = current ?? (use(tinyModel(1)), current!);
  if (m.model.packed.size > 0) {
    status('training needs a model with float weights: this GGUF model keeps its matrices quantized (open a model directory, or make a new tiny model)', 'error');
    return;
  }
  const steps = Math.max(1, Number($<HTMLInputElement>('train-steps').value) || 20);
  const losses: number[] = [];
  stopRequested = false;
  $<HTMLButtonElement>('stop').disabled = false;
  await guarded('training', async () => {
    await trainOnText(m, $<HTMLTextAreaElement>('train-text').value, { steps, batchSize: 4, seqLength: 64, lr: 2e-3 }, (step, loss) => {
      losses.push(loss);
      $('loss-values').textContent = `step ${step}/${steps} · loss ${loss.toFixed(4)} (first ${losses[0]!.toFixed(4)})`;
      $('loss-values').dataset['losses'] = JSON.stringify(losses);
      $('loss-plot').innerHTML = svgLineChart([{ name: 'training loss', color: '#1f77b4', points: losses.map((l, i) => [i + 1, l] as const) }], { title: 'training loss', xLabel: 'step', yLabel: 'loss', width: 520, height: 260 });
      status(`training: step ${step}/${steps}`, 'busy');
    }, () => stopRequested);
    const links = checkpointLinks(m);
    const box = $('downloads');
    box.textContent = 'Download the checkpoint: ';
    for (const l of links) {
      const a = document.createElement('a');
      a.href = l.url;
      a.download = l.name;
      a.textContent = `${l.name} (${(l.bytes / 1024).toFixed(0)} KiB)`;
      box.append(a);
    }
    status(`trained ${losses.length} steps`, 'done');
  });
  $<HTMLButtonElement>('stop').disabled = true;
}

/** A URL ending in `.gguf` is a GGUF file; any other is a model directory. */
function modelFromAnyUrl(url: string): Promise<StudioModel> {
  return /\.gguf([?#].*)?$/i.test(url) ? modelFromGgufUrl(url) : modelFromUrl(url);
}

async function start(): Promise<void> {
  $<HTMLTextAreaElement>('train-text').value = UDHR_ARTICLE_1;
  $('send').addEventListener('click', () => void send());
  $('prompt').addEventListener('keydown', (e) => { if (e.key === 'Enter') void send(); });
  $('train').addEventListener('click', () => void train());
  $('stop').addEventListener('click', () => { stopRequested = true; });
  $('new-tiny').addEventListener('click', () => use(tinyModel(Date.now() % 1000)));
  $('model-dir').addEventListener('change', () => {
    const files = $<HTMLInputElement>('model-dir').files;
    if (files && files.length > 0) void guarded('loading', async () => use(await modelFromPicked(files)));
  });
  $('model-gguf').addEventListener('change', () => {
    const file = $<HTMLInputElement>('model-gguf').files?.[0];
    if (file) void guarded('loading', async () => use(await modelFromGgufFile(file)));
  });
  $('load-url').addEventListener('click', () => void guarded('loading', async () => use(await modelFromAnyUrl($<HTMLInputElement>('model-url').value))));
  const d = await describeDevice();
  $('device').textContent = d.label;
  $('device').dataset['webgpu'] = d.webgpuAdapter ?? '';
  for (const n of d.notices) {
    const li = document.createElement('li');
    li.textContent = n;
    $('notices').append(li);
  }
  const q = new URLSearchParams(location.search).get('model');
  if (q) await guarded('loading', async () => use(await modelFromAnyUrl(q)));
  document.body.dataset['ready'] = '1';
}

void start();
