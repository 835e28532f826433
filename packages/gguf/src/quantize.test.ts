// apertus-quantize writes llama-quantize's files: a checkpoint converted to each mix here and the
// same checkpoint converted to F32/BF16 here and then quantized by llama.cpp itself
// (llama_model_quantize of the llama library node-llama-cpp ships) hold the same tensors, of the
// same types, with the same bytes, and the same metadata.
import fs from 'node:fs';
import path from 'node:path';
import { ApertusModel, presetConfig, saveCheckpoint } from '@apertus/model';
import { gguf as hfGguf } from '@huggingface/gguf';
import { afterAll, describe, expect, it } from 'vitest';
import { convertCheckpoint } from './convert';
import { fixtureTokenizer, tempDir } from './fixture.test-helper';
import { ggmlReference } from './ggml-reference.test-helper';
import { MIX_FILE_TYPE, type QuantMix } from './mix';
import { GGML_TYPES, rowBytes } from './types';

const tmp = tempDir();
afterAll(() => tmp.remove());

/** 8 layers: use_more_bits gives layers 0, 3, 6 and 7 more bits. */
const config = presetConfig('tiny', {
  vocab_size: 1536, hidden_size: 256, intermediate_size: 768, num_hidden_layers: 8, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64,
  max_position_embeddings: 512, initializer_range: 0.05,
});

/**
 * Tensor name → [ggml type id, bytes] and the metadata (general.file_type aside) of a file, read
 * with an independent parser (@huggingface/gguf) and the tensor table's offsets.
 */
async function contents(file: string): Promise<{ tensors: Map<string, [number, Buffer]>; meta: Record<string, unknown>; fileType: unknown }> {
  const { metadata, tensorInfos, tensorDataOffset } = await hfGguf(file, { allowLocalFile: true });
  const bytes = fs.readFileSync(file);
  const byId = new Map(Object.values(GGML_TYPES).map((t) => [t.id, t]));
  const tensors = new Map(tensorInfos.map((t) => {
    const type = byId.get(Number(t.dtype))!, dims = t.shape.map(Number), start = Number(tensorDataOffset + t.offset);
    const n = rowBytes(type, dims[0]!) * dims.slice(1).reduce((x, y) => x * y, 1);
    return [t.name, [type.id, bytes.subarray(start, start + n)] as [number, Buffer]];
  }));
  const { 'general.file_type': fileType, version: _v, tensor_count: _t, kv_count: _k, ...meta } = metadata as Record<string, unknown>;
  return { tensors, meta, fileType };
}

describe('apertus-quantize writes the files llama-quantize writes', () => {
  const t = fixtureTokenizer();
  const files = { 'tokenizer.json': JSON.stringify(t.tokenizerJson), 'tokenizer_config.json': JSON.stringify(t.tokenizerConfig) };
  const model = ApertusModel.init(config, 21);

  for (const dtype of ['f32', 'bf16'] as const) {
    const dir = path.join(tmp.dir, `hf-${dtype}`);
    saveCheckpoint(model, dir, { dtype, files });
    const float = path.join(tmp.dir, `${dtype}.gguf`);
    convertCheckpoint(dir, float, dtype === 'f32' ? 'F32' : 'BF16');

    for (const mix of ['Q4_K_M', 'Q5_K_M', 'Q6_K', 'Q8_0'] as QuantMix[]) {
      it(`${mix} from a ${dtype} checkpoint: the same tensors, types, bytes and metadata`, async () => {
        const ours = path.join(tmp.dir, `ours-${dtype}-${mix}.gguf`), theirs = path.join(tmp.dir, `llama-${dtype}-${mix}.gguf`);
        convertCheckpoint(dir, ours, mix);
        ggmlReference('model_quantize', float, theirs, String(MIX_FILE_TYPE[mix]));
        const [a, b] = [await contents(ours), await contents(theirs)];
        expect(a.fileType).toBe(MIX_FILE_TYPE[mix]);
        expect(b.fileType).toBe(MIX_FILE_TYPE[mix]);
        expect(a.meta).toEqual(b.meta);
        expect([...a.tensors.keys()].sort()).toEqual([...b.tensors.keys()].sort());
        for (const [name, [type, bytes]] of a.tensors) {
          const [ltype, lbytes] = b.tensors.get(name)!;
          expect(type, name).toBe(ltype);
          expect(bytes.equals(lbytes), `${name} (${type}): bytes`).toBe(true);
        }
      }, 120_000);
    }
  }
});
