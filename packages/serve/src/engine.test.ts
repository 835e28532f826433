// The engine / transport split: `@apertus/serve/engine` reaches no HTTP or WebSocket code, the
// apps use only it, the engine's errors carry codes (no statuses) and the HTTP transport maps them.

import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { toApiError } from './api-error';
import { EngineError, PromptError, Scheduler, loadServedModel, type ServedModel } from './engine';
import { tempDir, writeRandomCheckpoint } from './testing';

const src = import.meta.dirname;
const root = path.resolve(src, '../../..');

/** Every module reachable from `entry` by static imports: local files and external specifiers. */
function importGraph(entry: string): { files: Set<string>; external: Set<string> } {
  const files = new Set<string>();
  const external = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/^(?:import|export)\b[^;]*?from\s+'([^']+)'/gms)) {
      const spec = m[1]!;
      if (spec.startsWith('.')) visit(path.resolve(path.dirname(file), spec.endsWith('.ts') ? spec : `${spec}.ts`));
      else external.add(spec);
    }
  };
  visit(entry);
  return { files, external };
}

describe('engine entry', () => {
  test('reaches no HTTP, WebSocket or OpenAI-response code', () => {
    const { files, external } = importGraph(path.join(src, 'engine.ts'));
    const names = [...files].map((f) => path.basename(f)).sort();
    for (const transport of ['server.ts', 'ws.ts', 'http-util.ts', 'api-error.ts', 'origin-guard.ts', 'requests.ts', 'responses.ts', 'run.ts', 'web-page.ts', 'cli.ts']) {
      expect(names).not.toContain(transport);
    }
    expect(names).toEqual(expect.arrayContaining(['scheduler.ts', 'output-parser.ts', 'stop-strings.ts', 'json-grammar.ts', 'token-constraint.ts', 'load.ts', 'errors.ts']));
    for (const spec of ['node:http', 'node:https', 'node:net', 'ws']) expect(external).not.toContain(spec);
  });

  test('the inference apps import the engine entry only (their tests also the testing entry)', () => {
    const dir = path.join(root, 'apps/infer/src');
    const specs = new Set<string>();
    const testSpecs = new Set<string>();
    for (const f of fs.readdirSync(dir, { recursive: true }) as string[]) {
      if (!f.endsWith('.ts')) continue;
      for (const m of fs.readFileSync(path.join(dir, f), 'utf8').matchAll(/from '(@apertus\/serve[^']*)'/g)) (f.endsWith('.test.ts') ? testSpecs : specs).add(m[1]!);
    }
    expect([...specs]).toEqual(['@apertus/serve/engine']);
    expect([...testSpecs].sort()).toEqual(['@apertus/serve/engine', '@apertus/serve/testing']);
  });
});

describe('engine errors', () => {
  const tmp = tempDir();
  let served: ServedModel;
  beforeAll(async () => {
    served = await loadServedModel(writeRandomCheckpoint(tmp.dir, 'tiny'));
  });
  afterAll(() => tmp.remove());

  test('submit refuses with codes and fields, and the HTTP transport maps them', async () => {
    const scheduler = new Scheduler(served, { maxBatch: 1, maxQueue: 0, contextLength: 64 });
    const refuse = (req: Parameters<Scheduler['submit']>[0]) => {
      try {
        scheduler.submit(req, () => {});
      } catch (e) {
        return e as EngineError;
      }
      throw new Error('accepted');
    };
    const cases: [EngineError, string, string | null, number, string | null][] = [
      [refuse({ prompt: [], maxTokens: 4 }), 'invalid_request', 'prompt', 400, null],
      [refuse({ prompt: [1, 5000000], maxTokens: 4 }), 'invalid_request', 'prompt', 400, null],
      [refuse({ prompt: [1, 2], maxTokens: 63 }), 'context_length_exceeded', 'max_tokens', 400, 'context_length_exceeded'],
      [refuse({ prompt: [1, 2], maxTokens: 4, sampling: { topP: 2 } }), 'invalid_request', 'top_p', 400, null],
    ];
    const running = scheduler.submit({ prompt: [1, 1100, 1200], maxTokens: 30 }, () => {});
    cases.push([refuse({ prompt: [1, 2], maxTokens: 4 }), 'queue_full', null, 429, 'queue_full']);
    running.cancel();
    await scheduler.idle();
    for (const [e, code, field, status, apiCode] of cases) {
      expect(e).toBeInstanceOf(EngineError);
      expect([e.code, e.field]).toEqual([code, field]);
      expect(e).not.toHaveProperty('status');
      const api = toApiError(e);
      expect([api.status, api.param, api.code]).toEqual([status, field, apiCode]);
    }
    expect(toApiError(new EngineError('shutdown', 'bye')).status).toBe(503);
    expect(toApiError(new EngineError('model_error', 'boom')).toBody().error).toMatchObject({ type: 'server_error', code: 'model_error' });
    expect(toApiError(new PromptError('messages[0].content', 'x')).toBody().error).toMatchObject({ type: 'invalid_request_error', param: 'messages[0].content' });
  });
});
