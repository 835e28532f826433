// The studio's model worker: loads the model, answers chat turns (streaming the text), trains and
// hands out the checkpoint's bytes — off the page's main thread, so that the WebGPU device (whose
// reads sleep in Atomics.wait while its own worker drives the GPUDevice) may run here.

import { gemmThreads, isStoredWeight, useDevice } from '@apertus/tensor';
import { chatTurn } from './chat';
import { checkpointFiles } from './download';
import { modelFromGgufFile } from './gguf-source';
import { modelFromPicked, modelFromUrl, tinyModel, type StudioModel } from './model-source';
import type { ModelSource, StudioRequest, StudioResponse, StudioResults } from './protocol';
import { trainOnText } from '@apertus/recipes';

let current: StudioModel | null = null;
let stopRequested = false;

const post = (m: StudioResponse): void => postMessage(m);

/** The model from `s` (a URL ending in `.gguf` is a GGUF file; any other is a model directory); request `id` gets a Hub download's progress. */
function load(s: ModelSource, id: number): Promise<StudioModel> {
  switch (s.kind) {
    case 'dir': return modelFromPicked(s.files, s.name);
    case 'gguf': return modelFromGgufFile(s.file);
    case 'url': return modelFromUrl(s.url, s.name !== undefined ? { name: s.name } : {});
    case 'hub': return modelFromUrl(s.id, { ...(s.endpoint ? { endpoint: s.endpoint } : {}), ...(s.token ? { token: s.token } : {}), onProgress: (p) => post({ id, type: 'download', file: p.file, bytes: p.bytes, total: p.total }) });
    case 'tiny': return Promise.resolve(tinyModel(s.seed));
  }
}

const model = (): StudioModel => (current ??= tinyModel(1));

async function answer(r: StudioRequest): Promise<StudioResults[keyof StudioResults]> {
  switch (r.type) {
    case 'device': {
      const wasm = () => `WebAssembly SIMD · ${gemmThreads()} thread${gemmThreads() === 1 ? '' : 's'}${gemmThreads() > 1 ? ' (Web Workers)' : ''}`;
      if (r.webgpu) {
        try {
          const { adapter } = await useDevice('webgpu');
          return { label: `WebGPU · ${adapter}`, webgpu: true, reason: null };
        } catch (e) {
          await useDevice('cpu');
          return { label: wasm(), webgpu: false, reason: e instanceof Error ? e.message : String(e) };
        }
      }
      await useDevice('cpu');
      return { label: wasm(), webgpu: false, reason: null };
    }
    case 'load': {
      const m = (current = await load(r.source, r.id));
      const c = m.model.config;
      return { name: m.name, layers: c.num_hidden_layers, hidden: c.hidden_size, vocab: c.vocab_size, packed: [...m.model.params.values()].some(isStoredWeight) };
    }
    case 'chat':
      return chatTurn(model(), r.messages, r.maxTokens, (text, tokens) => post({ id: r.id, type: 'text', text, tokens }));
    case 'train': {
      stopRequested = false;
      const m = model();
      const losses = await trainOnText(m, r.text, r.settings, (step, loss) => post({ id: r.id, type: 'step', step, loss }), () => stopRequested);
      return { losses, files: checkpointFiles(m) };
    }
    case 'stop':
      stopRequested = true;
      return null;
  }
}

self.onmessage = async (e: MessageEvent<StudioRequest>) => {
  const r = e.data;
  try {
    post({ id: r.id, type: 'done', result: await answer(r) });
  } catch (err) {
    post({ id: r.id, type: 'error', message: err instanceof Error ? err.message : String(err) });
  }
};
