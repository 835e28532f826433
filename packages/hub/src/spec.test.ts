import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { chooseGguf, selectModelFiles, shardFiles } from './select';
import { formatHubId, hubModelName, isRepoId, parseHubId } from './spec';

describe('parseHubId', () => {
  test('the four forms', () => {
    expect(parseHubId('swiss-ai/Apertus-8B-Instruct-2509')).toEqual({ repo: 'swiss-ai/Apertus-8B-Instruct-2509', revision: null, quant: null });
    expect(parseHubId('swiss-ai/Apertus-8B-2509@refs/pr/3')).toEqual({ repo: 'swiss-ai/Apertus-8B-2509', revision: 'refs/pr/3', quant: null });
    expect(parseHubId('bartowski/Apertus-GGUF:q4_k_m')).toEqual({ repo: 'bartowski/Apertus-GGUF', revision: null, quant: 'Q4_K_M' });
    expect(parseHubId('a/b@v1.0:IQ4_XS')).toEqual({ repo: 'a/b', revision: 'v1.0', quant: 'IQ4_XS' });
    expect(hubModelName(parseHubId('a/b@v1.0:IQ4_XS')!)).toBe('a/b:IQ4_XS');
  });

  test('what is not a Hub id: paths, bad names, empty parts', () => {
    for (const s of ['runs/udhr-tiny/model', './a/b', '/abs/path', 'a', 'a/', '/b', 'a/b/', 'a--x/b', 'a/b..c', '-a/b', 'a/b.', 'a b/c', 'a/b@', 'a/b:', 'a/b@x:y:z', 'a/b@../x', 'a/b:Q4-K', `a/${'x'.repeat(97)}`, 'model.gguf']) {
      expect(parseHubId(s), s).toBeNull();
    }
  });

  test('property: every well-formed id parses and formats back to itself', () => {
    const part = fc.stringMatching(/^[A-Za-z0-9_]{1,6}(?:[.-][A-Za-z0-9_]{1,6}){0,3}$/);
    const rev = fc.option(fc.stringMatching(/^[A-Za-z0-9_]+(?:[./-][A-Za-z0-9_]+){0,3}$/), { nil: null });
    const quant = fc.option(fc.stringMatching(/^[A-Z0-9_]{1,8}$/), { nil: null });
    fc.assert(fc.property(part, part, rev, quant, (owner, name, revision, q) => {
      const id = { repo: `${owner}/${name}`, revision, quant: q };
      expect(isRepoId(id.repo)).toBe(true);
      expect(parseHubId(formatHubId(id))).toEqual(id);
    }));
  });

  test('property: any string either parses to a valid repo id or is refused, never throws', () => {
    fc.assert(fc.property(fc.string({ maxLength: 60 }), (s) => {
      const id = parseHubId(s);
      if (id !== null) expect(isRepoId(id.repo)).toBe(true);
    }));
  });
});

describe('the model files of a repository', () => {
  const files = (...paths: string[]) => paths.map((path) => ({ path, size: 1, blobId: 'x', lfs: null }));

  test('GGUF by type as llama.cpp chooses it; default Q4_K_M, then Q8_0, then the first model file', () => {
    const paths = ['a/x-Q8_0.gguf', 'x-Q4_K_M.gguf', 'mmproj-x-Q4_K_M.gguf', 'x.imatrix.gguf', 'x-Q4_K_M-00002-of-00002.gguf', 'x-f16.gguf'];
    expect(chooseGguf(paths, null)).toBe('x-Q4_K_M.gguf');
    expect(chooseGguf(paths, 'Q8_0')).toBe('a/x-Q8_0.gguf');
    expect(chooseGguf(paths, 'F16')).toBe('x-f16.gguf');
    expect(chooseGguf(paths, 'Q4_K')).toBeNull(); // Q4_K_M is not Q4_K
    expect(chooseGguf(['b-IQ4_XS.gguf', 'a-BF16.gguf'], null)).toBe('a-BF16.gguf');
    expect(chooseGguf(['mmproj-only.gguf'], null)).toBeNull();
  });

  test('a checkpoint beats GGUF files without a type; split GGUF files and other formats are refused by name', () => {
    expect(selectModelFiles('o/n', files('config.json', 'model.safetensors', 'x-Q4_K_M.gguf', 'chat_template.jinja', 'README.md'), null))
      .toEqual({ format: 'safetensors', files: ['config.json', 'model.safetensors', 'chat_template.jinja'], index: null });
    expect(selectModelFiles('o/n', files('config.json', 'model.safetensors', 'x-Q4_K_M.gguf'), 'Q4_K_M')).toEqual({ format: 'gguf', file: 'x-Q4_K_M.gguf' });
    expect(() => selectModelFiles('o/n', files('x-Q4_K_M-00001-of-00003.gguf', 'x-Q4_K_M-00002-of-00003.gguf'), null)).toThrow('o/n: x-Q4_K_M-00001-of-00003.gguf is split into 3 parts; only single-file GGUF models are read (merge them with llama-gguf-split --merge)');
    expect(() => selectModelFiles('o/n', files('config.json', 'model.onnx'), null)).toThrow(/^o\/n: no weights to load: .*; it has model\.onnx, a format this loader does not read$/);
    expect(() => selectModelFiles('o/n', files('config.json'), 'Q8_0')).toThrow('o/n:Q8_0: no GGUF files (a :TYPE suffix picks a GGUF file of the repository)');
  });

  test('a listing path that would leave the snapshot folder is never chosen', () => {
    expect(selectModelFiles('o/n', files('../../evil-Q4_K_M.gguf', 'a/../b-Q4_K_M.gguf', '/abs-Q4_K_M.gguf', 'c\\d-Q4_K_M.gguf', 'ok-Q8_0.gguf'), null)).toEqual({ format: 'gguf', file: 'ok-Q8_0.gguf' });
  });

  test('shard index: the files its weight_map names; a path outside the folder is refused', () => {
    expect(shardFiles('o/n', JSON.stringify({ weight_map: { a: 'm-2.safetensors', b: 'm-1.safetensors', c: 'm-2.safetensors' } }))).toEqual(['m-2.safetensors', 'm-1.safetensors']);
    expect(() => shardFiles('o/n', JSON.stringify({ weight_map: { a: '../x.safetensors' } }))).toThrow('o/n: model.safetensors.index.json: weight_map: "../x.safetensors" is not a .safetensors file beside the index');
    expect(() => shardFiles('o/n', '{')).toThrow(/^o\/n: model\.safetensors\.index\.json: not JSON/);
  });
});
