// The messages between the studio page and its model worker (src/worker.ts). The page asks, the
// worker answers each request by its `id`: progress messages while it works (streamed text, a
// training step's loss), then one final message (`done` or `error`).

import type { ChatMessage } from '@apertus/tokenizer';
import type { TurnResult } from './chat';
import type { TextTraining } from '@apertus/recipes';

/** Where a model comes from: a picked directory or GGUF file, a URL, a Hub id (with the Hub's URL and a token), or a new tiny preset. */
export type ModelSource =
  | { kind: 'dir'; name: string; files: File[] }
  | { kind: 'gguf'; file: File }
  | { kind: 'url'; url: string; name?: string }
  | { kind: 'hub'; id: string; endpoint?: string; token?: string }
  | { kind: 'tiny'; seed: number };

/** A request from the page. `stop` ends a running training after its current step. */
export type StudioRequest =
  | { id: number; type: 'device'; webgpu: boolean }
  | { id: number; type: 'load'; source: ModelSource }
  | { id: number; type: 'chat'; messages: ChatMessage[]; maxTokens: number }
  | { id: number; type: 'train'; text: string; settings: TextTraining }
  | { id: number; type: 'stop' };

/** The loaded model, as the page names it. */
export interface ModelSummary { name: string; layers: number; hidden: number; vocab: number; packed: boolean }

/** A file of the trained checkpoint. */
export interface CheckpointFile { name: string; contents: string | Uint8Array }

/** What each request finishes with. */
export interface StudioResults {
  /** `device`: the backend's device line; `webgpu` false when WebGPU was asked for and failed (`reason` says why). */
  device: { label: string; webgpu: boolean; reason: string | null };
  load: ModelSummary;
  chat: TurnResult;
  train: { losses: number[]; files: CheckpointFile[] };
  stop: null;
}

/** A message from the worker. */
export type StudioResponse =
  | { id: number; type: 'text'; text: string; tokens: number }
  | { id: number; type: 'step'; step: number; loss: number }
  | { id: number; type: 'download'; file: string; bytes: number; total: number }
  | { id: number; type: 'done'; result: StudioResults[keyof StudioResults] }
  | { id: number; type: 'error'; message: string };
