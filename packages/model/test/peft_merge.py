"""Independent check of a LoRA merge, written from PEFT's documented adapter layout.

usage: peft_merge.py BASE_DIR ADAPTER_DIR MERGED_DIR
Reads the three directories with a minimal safetensors parser (8-byte little-endian header
length, JSON header, raw F32 data), computes W + lora_alpha / r * B @ A in float64 for every
adapted projection (the adapter tensors named base_model.model.<module>.lora_A.weight / lora_B),
and, for trainable_token_indices ({"embed_tokens": ids, "lm_head": ids}, or a list for the
embedding), the base table with rows ids replaced by
base_model.model.<table>.token_adapter.trainable_tokens_delta (PEFT's index_copy). Prints JSON:
the largest |merged - expected| over adapted weights and over token tables, the largest difference
of the other tensors, and the numbers of adapted modules and token tables.
"""
import json
import struct
import sys

import torch


def read_safetensors(path):
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == '__metadata__':
            continue
        assert info['dtype'] == 'F32', (name, info['dtype'])
        b, e = info['data_offsets']
        out[name] = torch.frombuffer(bytearray(data[b:e]), dtype=torch.float32).reshape(info['shape']).double()
    return out


def main():
    base_dir, adapter_dir, merged_dir = sys.argv[1:4]
    cfg = json.load(open(f'{adapter_dir}/adapter_config.json'))
    assert cfg['peft_type'] == 'LORA' and cfg['task_type'] == 'CAUSAL_LM'
    scaling = cfg['lora_alpha'] / (cfg['r'] ** 0.5 if cfg.get('use_rslora') else cfg['r'])
    base = read_safetensors(f'{base_dir}/model.safetensors')
    merged = read_safetensors(f'{merged_dir}/model.safetensors')
    lora = read_safetensors(f'{adapter_dir}/adapter_model.safetensors')
    prefix, suffix = 'base_model.model.', '.lora_A.weight'
    modules = [k[len(prefix):-len(suffix)] for k in lora if k.endswith(suffix)]
    adapted_err = 0.0
    for m in modules:
        A, B = lora[f'{prefix}{m}.lora_A.weight'], lora[f'{prefix}{m}.lora_B.weight']
        assert A.shape[0] == cfg['r'] and B.shape[1] == cfg['r']
        expected = base[f'{m}.weight'] + scaling * (B @ A)
        adapted_err = max(adapted_err, (merged[f'{m}.weight'] - expected).abs().max().item())
    tables = cfg.get('trainable_token_indices') or {}
    if isinstance(tables, list):
        tables = {'embed_tokens': tables}
    table_modules = {'embed_tokens': 'model.embed_tokens', 'lm_head': 'lm_head'}
    token_err = 0.0
    for key, ids in tables.items():
        m = table_modules[key]
        rows = lora[f'{prefix}{m}.token_adapter.trainable_tokens_delta']
        expected = base[f'{m}.weight'].index_copy(0, torch.tensor(ids), rows)
        token_err = max(token_err, (merged[f'{m}.weight'] - expected).abs().max().item())
    touched = set(modules) | {table_modules[k] for k in tables}
    others = [k for k in base if k[:-len('.weight')] not in touched]
    other_err = max((merged[k] - base[k]).abs().max().item() for k in others)
    print(json.dumps({'modules': len(modules), 'adapted_err': adapted_err, 'token_tables': len(tables), 'token_err': token_err,
                      'other_err': other_err, 'scale': max(v.abs().max().item() for v in merged.values())}))


main()
