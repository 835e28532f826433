"""PyTorch (eager, float32, CPU) Apertus decoder used as the speed peer of our benchmarks.

Same architecture and sizes as @apertus/model (QK-norm, llama3 RoPE, GQA, xIELU, untied head);
attention is plain masked softmax (torch 1.13 has no fused SDPA on CPU). AdEMAMix follows the
reference update (bias correction on m1 and nu, eps outside the sqrt, decoupled weight decay).

Usage: python3 torch_apertus.py '{"mode": "train"|"decode"|"prefill", "config": {...}, "B": 8, "T": 256, "steps": 5, "threads": 2}'
Prints one JSON line with seconds per step (median) and tokens/s.
"""
import json, math, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F

args = json.loads(sys.argv[1])
torch.set_num_threads(args.get("threads", 2))
c = args["config"]
H, nh, nkv, hd, I, V, L = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], c["intermediate_size"], c["vocab_size"], c["num_hidden_layers"]
eps = c["rms_norm_eps"]


class RMSNorm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


class XIELU(nn.Module):
    def __init__(self):
        super().__init__()
        self.alpha_p = nn.Parameter(torch.tensor([math.log(math.expm1(0.8))]))
        self.alpha_n = nn.Parameter(torch.tensor([math.log(math.expm1(0.3))]))
        self.beta, self.eps = 0.5, -1e-6

    def forward(self, x):
        ap = F.softplus(self.alpha_p)
        an = self.beta + F.softplus(self.alpha_n)
        return torch.where(x > 0, ap * x * x + self.beta * x, an * (torch.expm1(torch.clamp(x, max=self.eps)) - x) + self.beta * x)


def rotate(x, cos, sin):
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention_layernorm, self.feedforward_layernorm = RMSNorm(H), RMSNorm(H)
        self.q_proj, self.k_proj = nn.Linear(H, nh * hd, bias=False), nn.Linear(H, nkv * hd, bias=False)
        self.v_proj, self.o_proj = nn.Linear(H, nkv * hd, bias=False), nn.Linear(nh * hd, H, bias=False)
        self.q_norm, self.k_norm = RMSNorm(hd), RMSNorm(hd)
        self.up_proj, self.down_proj, self.act = nn.Linear(H, I, bias=False), nn.Linear(I, H, bias=False), XIELU()

    def forward(self, h, cos, sin, mask, cache=None):
        B, T, _ = h.shape
        a = self.attention_layernorm(h)
        q = rotate(self.q_norm(self.q_proj(a).view(B, T, nh, hd)), cos, sin).transpose(1, 2)
        k = rotate(self.k_norm(self.k_proj(a).view(B, T, nkv, hd)), cos, sin).transpose(1, 2)
        v = self.v_proj(a).view(B, T, nkv, hd).transpose(1, 2)
        if cache is not None:
            if "k" in cache:
                k, v = torch.cat([cache["k"], k], 2), torch.cat([cache["v"], v], 2)
            cache["k"], cache["v"] = k, v
        k, v = k.repeat_interleave(nh // nkv, 1), v.repeat_interleave(nh // nkv, 1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        o = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, nh * hd)
        h = h + self.o_proj(o)
        return h + self.down_proj(self.act(self.up_proj(self.feedforward_layernorm(h))))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(V, H)
        self.layers = nn.ModuleList([Layer() for _ in range(L)])
        self.norm = RMSNorm(H)
        self.lm_head = nn.Linear(H, V, bias=False)
        inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2).float() / hd))
        self.register_buffer("inv", inv)

    def forward(self, ids, start=0, caches=None):
        B, T = ids.shape
        pos = torch.arange(start, start + T).float()
        ang = pos[:, None] * self.inv[None]
        emb = torch.cat([ang, ang], -1)
        cos, sin = emb.cos()[None, :, None, :], emb.sin()[None, :, None, :]
        mask = None
        if T > 1:
            mask = torch.ones(T, start + T, dtype=torch.bool).triu(start + 1)
        h = self.embed_tokens(ids)
        for i, layer in enumerate(self.layers):
            h = layer(h, cos, sin, mask, None if caches is None else caches[i])
        return self.lm_head(self.norm(h))


class AdEMAMix(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999, 0.9999), alpha=8.0, eps=1e-8, weight_decay=0.1):
        super().__init__(params, dict(lr=lr, betas=betas, alpha=alpha, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            b1, b2, b3 = g["betas"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"], st["m1"], st["m2"], st["nu"] = 0, torch.zeros_like(p), torch.zeros_like(p), torch.zeros_like(p)
                st["step"] += 1
                t = st["step"]
                st["m1"].mul_(b1).add_(p.grad, alpha=1 - b1)
                st["m2"].mul_(b3).add_(p.grad, alpha=1 - b3)
                st["nu"].mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                denom = (st["nu"].sqrt() / math.sqrt(1 - b2 ** t)).add_(g["eps"])
                update = (st["m1"] / (1 - b1 ** t) + g["alpha"] * st["m2"]) / denom
                update.add_(p, alpha=g["weight_decay"])
                p.add_(update, alpha=-g["lr"])


torch.manual_seed(0)
model = Model()
B, T, steps = args.get("B", 1), args.get("T", 64), args.get("steps", 5)
# "clock": "cpu" times the process's CPU seconds instead of wall time (a loaded machine, 1 thread).
clock = time.process_time if args.get("clock") == "cpu" else time.perf_counter
times = []
# "budget" (seconds of the clock above): training stops timing once its steps took that long, and a
# warm-up step longer than the budget is itself the measurement (the same rule as speed.mjs).
budget = args.get("budget", float("inf"))
if args["mode"] == "train":
    opt = AdEMAMix(model.parameters())
    ids = torch.randint(0, V, (B, T)); tg = torch.randint(0, V, (B, T))
    for i in range(steps + 1):
        t0 = clock()
        loss = F.cross_entropy(model(ids).view(B * T, V), tg.view(-1))
        loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
        dt = clock() - t0
        if i > 0 or dt > budget: times.append(dt)
        if sum(times) > budget: break
    tokens = B * T
elif args["mode"] == "prefill":
    ids = torch.randint(0, V, (B, T))
    with torch.no_grad():
        for i in range(steps + 1):
            t0 = clock(); model(ids, 0, [dict() for _ in range(L)])
            if i > 0: times.append(clock() - t0)
    tokens = B * T
else:  # decode: prefill T tokens, then time single-token steps
    ids = torch.randint(0, V, (B, T))
    with torch.no_grad():
        caches = [dict() for _ in range(L)]
        model(ids, 0, caches)
        tok = torch.randint(0, V, (B, 1))
        for i in range(steps + 1):
            t0 = clock(); model(tok, T + i, caches)
            if i > 0: times.append(clock() - t0)
    tokens = B
times.sort()
med = times[len(times) // 2]
print(json.dumps({"seconds": med, "tokens_per_s": tokens / med, "torch": torch.__version__, "threads": torch.get_num_threads()}))
