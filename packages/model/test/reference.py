"""Independent PyTorch reference of the Apertus decoder (spec apertus-model.md §2-4), in float64.

Usage: python3 reference.py DIR [--checkpoint CKPT_DIR]
With --checkpoint the weights come from a Hugging Face checkpoint directory (config.json and
model.safetensors or shards + index, parsed here from the raw bytes) instead of weights.bin.
DIR holds config.json (HF names), weights.json (list of [name, shape]) + weights.bin (float32, in
that order), inputs.json {ids, positions, doc_ids?, targets} with [B][T] lists. Writes
DIR/output.json: {"logits": flat list, "loss": float, "grads": {name: flat list}}.
Written from the spec, not from transformers' code: full T x T masked softmax attention,
torch.where xIELU (or, with hidden_act "swiglu", Llama's gated MLP down(silu(gate(x)) * up(x))),
HF llama3 inv_freq in float32.
"""
import json, math, sys
import numpy as np
import torch

d = sys.argv[1]
inp = json.load(open(f"{d}/inputs.json"))
W = {}

def trainable(name):
    return not (name.endswith("act_fn.beta") or name.endswith("act_fn.eps"))

def read_safetensors(path):
    """Parse a safetensors file from its bytes (8-byte little-endian header size, JSON header, data)."""
    buf = open(path, "rb").read()
    n = int.from_bytes(buf[:8], "little")
    header = json.loads(buf[8:8 + n])
    meta = header.pop("__metadata__", {})
    assert meta.get("format") == "pt", f"{path}: __metadata__.format must be 'pt', got {meta}"
    base = 8 + n
    assert base % 8 == 0, "data must start 8-byte aligned"
    ends = sorted(v["data_offsets"] for v in header.values())
    assert ends[0][0] == 0 and all(a[1] == b[0] for a, b in zip(ends, ends[1:])) and base + ends[-1][1] == len(buf), "holes or trailing bytes"
    out = {}
    for name, v in header.items():
        b, e = v["data_offsets"]
        raw = buf[base + b: base + e]
        if v["dtype"] == "BF16":
            arr = (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        elif v["dtype"] == "F32":
            arr = np.frombuffer(raw, dtype=np.float32)
        else:
            raise ValueError(f"{name}: unexpected dtype {v['dtype']}")
        out[name] = arr.reshape(v["shape"])
    return out

if len(sys.argv) > 2 and sys.argv[2] == "--checkpoint":
    ck = sys.argv[3]
    cfg = json.load(open(f"{ck}/config.json"))
    assert cfg["model_type"] == "apertus" and cfg["architectures"] == ["ApertusForCausalLM"]
    import os
    if os.path.exists(f"{ck}/model.safetensors.index.json"):
        index = json.load(open(f"{ck}/model.safetensors.index.json"))
        tensors = {}
        for shard in sorted(set(index["weight_map"].values())):
            tensors.update(read_safetensors(f"{ck}/{shard}"))
        assert set(tensors) == set(index["weight_map"]), "index and shards disagree"
        assert index["metadata"]["total_size"] == sum(t.nbytes // (2 if cfg.get("torch_dtype") == "bfloat16" else 1) for t in tensors.values()), "total_size"
    else:
        tensors = read_safetensors(f"{ck}/model.safetensors")
    for name, arr in tensors.items():
        W[name] = torch.tensor(np.array(arr), dtype=torch.float64, requires_grad=trainable(name))
else:
    cfg = json.load(open(f"{d}/config.json"))
    names = json.load(open(f"{d}/weights.json"))
    raw = np.fromfile(f"{d}/weights.bin", dtype=np.float32)
    off = 0
    for name, shape in names:
        n = int(np.prod(shape)) if shape else 1
        W[name] = torch.tensor(raw[off:off + n].reshape(shape), dtype=torch.float64, requires_grad=trainable(name))
        off += n

H, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
hd = cfg.get("head_dim") or H // nh
eps = cfg["rms_norm_eps"]

def inv_freq():
    theta, sc = cfg["rope_theta"], cfg.get("rope_scaling")
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    if not sc:
        return inv.double()
    f, lf, hf, old = sc["factor"], sc["low_freq_factor"], sc["high_freq_factor"], sc["original_max_position_embeddings"]
    low_w, high_w = old / lf, old / hf
    wl = 2 * math.pi / inv
    base = torch.where(wl > low_w, inv / f, inv)
    s = (old / wl - lf) / (hf - lf)
    smooth = (1 - s) * base / f + s * base
    medium = ~(wl < high_w) & ~(wl > low_w)
    return torch.where(medium, smooth, base).double()

def rms(x, w):
    return w * (x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps))

def rope(x, pos, inv):  # x [B, T, heads, hd]
    ang = pos[..., None].double() * inv  # [B, T, hd/2]
    emb = torch.cat([ang, ang], -1)[:, :, None, :]
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    return x * emb.cos() + torch.cat([-x2, x1], -1) * emb.sin()

def xielu(x, p):
    ap = torch.nn.functional.softplus(W[p + "alpha_p"])
    an = W[p + "beta"] + torch.nn.functional.softplus(W[p + "alpha_n"])
    beta, e = W[p + "beta"], W[p + "eps"]
    return torch.where(x > 0, ap * x * x + beta * x, an * (torch.expm1(torch.minimum(x, e)) - x) + beta * x)

ids = torch.tensor(inp["ids"])
pos = torch.tensor(inp["positions"])
B, T = ids.shape
causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
mask = causal[None].expand(B, T, T)
if inp.get("doc_ids") is not None:
    doc = torch.tensor(inp["doc_ids"])
    mask = mask & (doc[:, :, None] == doc[:, None, :])
inv = inv_freq()

h = W["model.embed_tokens.weight"][ids]
for i in range(cfg["num_hidden_layers"]):
    p = f"model.layers.{i}."
    a = rms(h, W[p + "attention_layernorm.weight"])
    q = (a @ W[p + "self_attn.q_proj.weight"].T).view(B, T, nh, hd)
    k = (a @ W[p + "self_attn.k_proj.weight"].T).view(B, T, nkv, hd)
    v = (a @ W[p + "self_attn.v_proj.weight"].T).view(B, T, nkv, hd)
    q = rope(rms(q, W[p + "self_attn.q_norm.weight"]), pos, inv)
    k = rope(rms(k, W[p + "self_attn.k_norm.weight"]), pos, inv)
    k = k.repeat_interleave(nh // nkv, dim=2)
    v = v.repeat_interleave(nh // nkv, dim=2)
    s = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(hd)
    s = s.masked_fill(~mask[:, None], float("-inf"))
    o = torch.einsum("bhts,bshd->bthd", torch.softmax(s, -1), v).reshape(B, T, nh * hd)
    h = h + o @ W[p + "self_attn.o_proj.weight"].T
    m = rms(h, W[p + "feedforward_layernorm.weight"])
    up = m @ W[p + "mlp.up_proj.weight"].T
    if cfg.get("hidden_act", "xielu") == "swiglu":
        inner = torch.nn.functional.silu(m @ W[p + "mlp.gate_proj.weight"].T) * up
    else:
        inner = xielu(up, p + "mlp.act_fn.")
    h = h + inner @ W[p + "mlp.down_proj.weight"].T
h = rms(h, W["model.norm.weight"])
logits = h @ W["lm_head.weight"].T
tg = torch.tensor(inp["targets"])
loss = torch.nn.functional.cross_entropy(logits.reshape(B * T, -1), tg.reshape(-1), ignore_index=-100)
loss.backward()
json.dump({
    "logits": logits.detach().reshape(-1).tolist(),
    "loss": loss.item(),
    "grads": {n: t.grad.reshape(-1).tolist() for n, t in W.items() if t.grad is not None},
}, open(f"{d}/output.json", "w"))
