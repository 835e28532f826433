"""Random Apertus checkpoints in the three Hugging Face layouts, with transformers' own outputs.

Generator command (run live by src/hf-parity.test.ts through the Python peers):

    python3 hf_parity.py OUT_DIR

writes, all float32:
  OUT_DIR/2509/  ApertusForCausalLM, untied head (transformers' save_pretrained)
  OUT_DIR/mini/  ApertusForCausalLM with tie_word_embeddings (no lm_head.weight in the file) and
                 Apertus Mini's special-token quirk: the config says pad 3, the tokenizer files
                 make id 3 "[INST]" and "<pad>" id 10 (tokenizer.json, tokenizer_config.json,
                 special_tokens_map.json, generation_config.json)
  OUT_DIR/1p5/   the Apertus 1.5 layout built from 2509/ (transformers has no 1.5 class): the
                 config nested under text_config with rope_parameters and output_vocab_size, the
                 decoder under model.language_model., lm_head at the root, an embedding of EXTRA
                 more rows whose first rows are 2509's, and stand-in image/audio tokenizer tensors
  OUT_DIR/reference.json  {"prompt": ids, "2509"|"mini": {"logits": [T*V], "greedy": [64 ids]},
                 "mini_tokens": {bos, eos, pad ids as AutoTokenizer reads them, generation eos}}
The 1.5 tower must give 2509's logits and greedy tokens on text ids.
"""
import json
import os
import sys

import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer, models, pre_tokenizers, decoders
from transformers import ApertusConfig, ApertusForCausalLM, AutoTokenizer, GenerationConfig

out = sys.argv[1]
torch.manual_seed(2026)
VOCAB, EXTRA, STEPS = 384, 64, 64
PROMPT = [1, 17, 120, 33, 250, 301, 99, 7, 150, 151, 152, 42]


def config(**kw):
    return ApertusConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, max_position_embeddings=4096, initializer_range=0.2, rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 256},
        bos_token_id=1, eos_token_id=2, pad_token_id=3, **kw)


def randomize(model):
    # transformers initialises norms to 1 and xIELU to its defaults; perturb them so every tensor matters.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.3 * torch.randn_like(p))
            elif "act_fn" in name:
                p.add_(0.2 * torch.randn_like(p))
    return model.eval()


def outputs(model):
    ids = torch.tensor([PROMPT])
    with torch.no_grad():
        logits = model(ids).logits[0].float()
        greedy = model.generate(ids, max_new_tokens=STEPS, min_new_tokens=STEPS, do_sample=False, eos_token_id=None, pad_token_id=0)[0, len(PROMPT):]
    return {"logits": logits.flatten().tolist(), "greedy": greedy.tolist()}


ref = {"prompt": PROMPT}

m2509 = randomize(ApertusForCausalLM(config()))
m2509.save_pretrained(f"{out}/2509", safe_serialization=True)
ref["2509"] = outputs(m2509)

mini = randomize(ApertusForCausalLM(config(tie_word_embeddings=True)))
assert mini.lm_head.weight.data_ptr() == mini.model.embed_tokens.weight.data_ptr()
mini.save_pretrained(f"{out}/mini", safe_serialization=True)
assert "lm_head.weight" not in load_file(f"{out}/mini/model.safetensors")
ref["mini"] = outputs(mini)

# Mini's tokenizer files: ids 0-99 named tokens, bytes at 100 + b (a byte-level BPE without merges).
names = {0: "<unk>", 1: "<s>", 2: "</s>", 3: "[INST]", 10: "<pad>", 65: "<|user_start|>", 66: "<|user_end|>", 67: "<|assistant_start|>",
         68: "<|assistant_end|>", 72: "<|tools_suffix|>"}
byte_chars = pre_tokenizers.ByteLevel.alphabet()
byte_map = {}
for b in range(256):  # GPT-2's byte-to-character table, in byte order
    c = chr(b) if (33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255) else None
    byte_map[b] = c
n = 0
for b in range(256):
    if byte_map[b] is None:
        byte_map[b] = chr(256 + n)
        n += 1
vocab = {names.get(i, f"<SPECIAL_{i}>"): i for i in range(100)}
vocab.update({byte_map[b]: 100 + b for b in range(256)})
tok = Tokenizer(models.BPE(vocab=vocab, merges=[], ignore_merges=True))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
tok.decoder = decoders.ByteLevel()
tok.add_special_tokens(list(names.values()))
tok.save(f"{out}/mini/tokenizer.json")
json.dump({"bos_token": "<s>", "eos_token": "<|assistant_end|>", "pad_token": "[INST]", "unk_token": "<unk>", "tokenizer_class": "PreTrainedTokenizerFast"},
          open(f"{out}/mini/tokenizer_config.json", "w"), indent=2)
json.dump({"bos_token": "<s>", "eos_token": "<|assistant_end|>", "pad_token": "<pad>", "unk_token": "<unk>"}, open(f"{out}/mini/special_tokens_map.json", "w"), indent=2)
GenerationConfig(bos_token_id=1, eos_token_id=[68, 2, 72], pad_token_id=10).save_pretrained(f"{out}/mini")
t = AutoTokenizer.from_pretrained(f"{out}/mini")
g = GenerationConfig.from_pretrained(f"{out}/mini")
ref["mini_tokens"] = {"bos": t.bos_token_id, "eos": t.eos_token_id, "pad": t.pad_token_id, "unk": t.unk_token_id, "generation_eos": g.eos_token_id,
                      "encoded": t("[INST] hi<pad>", add_special_tokens=False)["input_ids"]}

# The 1.5 layout from 2509/.
os.makedirs(f"{out}/1p5", exist_ok=True)
w = load_file(f"{out}/2509/model.safetensors")
stored = {}
for name, t in w.items():
    if name == "model.embed_tokens.weight":
        t = torch.cat([t, 0.2 * torch.randn(EXTRA, t.shape[1])])
    stored[name if name == "lm_head.weight" else "model.language_model." + name[len("model."):]] = t.contiguous()
stored["model.vision_tokenizer.encoder.conv_in.weight"] = torch.randn(8, 3, 3, 3)
stored["model.vision_tokenizer.quantize.embedding.weight"] = torch.randn(16, 4).to(torch.bfloat16)
stored["model.audio_tokenizer.backbone.norm.num_batches_tracked"] = torch.tensor(7, dtype=torch.int64)
save_file(stored, f"{out}/1p5/model.safetensors", metadata={"format": "pt"})
text = json.load(open(f"{out}/2509/config.json"))
for k in ("architectures", "transformers_version", "dtype", "torch_dtype"):
    text.pop(k, None)
text.update(model_type="apertus1p5_text", vocab_size=VOCAB + EXTRA, output_vocab_size=VOCAB)
json.dump({
    "architectures": ["Apertus1p5ForConditionalGeneration"], "model_type": "apertus1p5",
    "image_token_id": VOCAB + 7, "audio_token_id": VOCAB + 13, "image_token_offset": VOCAB + 32, "audio_token_offset": VOCAB + 48,
    "vision_tokenizer_config": {"type": "Emu3.5", "codebook_size": 16}, "audio_tokenizer_config": {"type": "wavtokenizer", "codebook_size": 16},
    "tie_word_embeddings": False, "dtype": "float32", "transformers_version": "5.18.0", "text_config": text,
}, open(f"{out}/1p5/config.json", "w"), indent=2)

json.dump(ref, open(f"{out}/reference.json", "w"))
