"""Hugging Face transformers' ApertusForCausalLM (PyTorch, float32, CPU, SDPA attention) as the speed
peer of the training and prefill benchmarks (speed.mjs, apps/pretrain/bench/run.mjs).

The model is read from the Hugging Face checkpoint the benchmark wrote from our model (f32
safetensors), so both sides run the identical model on the identical tokens (inputs.json: ids and
targets, [B][T]). A training step is what a transformers user runs: forward with labels (the
loss through transformers' ForCausalLMLoss, given the targets as `shift_labels` so that both sides
predict the same tokens), backward, optimizer step, zero_grad(set_to_none=True). Optimizers:
- "adamw": torch.optim.AdamW(fused=True), the transformers Trainer default on torch >= 2.8
  ("adamw_torch_fused");
- "ademamix": neither torch nor transformers has AdEMAMix on CPU (the Trainer's "ademamix" is
  bitsandbytes, a CUDA library), so this is the paper's reference implementation (apple/ml-ademamix
  pytorch/ademamix.py, as training-recipe.md section 1 gives it): per-parameter in-place updates,
  bias correction on m1 and nu only, eps outside the sqrt, decoupled weight decay scaled by lr.
Both optimizers get the same groups as ours: no weight decay for tensors of rank <= 1.
Prefill is what generate() runs first: forward of the prompt with a fresh DynamicCache and only
the last position's logits (logits_to_keep=1), under no_grad.

Usage: python hf_apertus.py '{"mode": "train"|"prefill"|"decode", "checkpoint": DIR, "inputs": FILE,
  "steps": 5, "threads": 1, "clock": "wall"|"cpu", "budget": 120, "optimizer": "adamw"|"ademamix",
  "lr": 1e-3, "weight_decay": 0.1}'
Prints one JSON line: seconds per step (median), tokens/s, the first step's loss (train), versions.
"""
import json, math, sys, time

args = json.loads(sys.argv[1])
import torch

torch.set_num_threads(args.get("threads", 1))
import transformers
from transformers import ApertusForCausalLM


class AdEMAMix(torch.optim.Optimizer):
    """AdEMAMix (Pagliardini, Ablin, Grangier 2024), the paper's PyTorch reference update without warm-ups."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999, 0.9999), alpha=8.0, eps=1e-8, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, alpha=alpha, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr, lmbda, eps, alpha = group["lr"], group["weight_decay"], group["eps"], group["alpha"]
            beta1, beta2, beta3 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg_fast"] = torch.zeros_like(p)
                    state["exp_avg_slow"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                exp_avg_fast, exp_avg_slow, exp_avg_sq = state["exp_avg_fast"], state["exp_avg_slow"], state["exp_avg_sq"]
                bias_correction1 = 1 - beta1 ** state["step"]
                bias_correction2 = 1 - beta2 ** state["step"]
                exp_avg_fast.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_slow.mul_(beta3).add_(grad, alpha=1 - beta3)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = (exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(eps)
                update = (exp_avg_fast.div(bias_correction1) + alpha * exp_avg_slow) / denom
                update.add_(p, alpha=lmbda)
                p.add_(-lr * update)


def optimizer(model):
    wd, lr = args.get("weight_decay", 0.1), args.get("lr", 1e-3)
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}]
    if args.get("optimizer", "adamw") == "ademamix":
        return AdEMAMix(groups, lr=lr, betas=(0.9, 0.999, 0.9999), alpha=8.0, eps=1e-8)
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-8, fused=True)


model = ApertusForCausalLM.from_pretrained(args["checkpoint"], dtype=torch.float32, attn_implementation="sdpa")
inputs = json.load(open(args["inputs"]))
ids = torch.tensor(inputs["ids"], dtype=torch.long)
B, T = ids.shape
steps = args.get("steps", 5)
# "clock": "cpu" times the process's CPU seconds instead of wall time (a loaded machine, 1 thread).
clock = time.process_time if args.get("clock") == "cpu" else time.perf_counter
# "budget" (seconds of the clock above): timing stops once the timed steps took that long, and a
# warm-up step longer than the budget is itself the measurement (the same rule as speed.mjs).
budget = args.get("budget", float("inf"))
times, first_loss = [], None
if args["mode"] == "train":
    model.train()
    targets = torch.tensor(inputs["targets"], dtype=torch.long)
    opt = optimizer(model)
    for i in range(steps + 1):
        t0 = clock()
        loss = model(input_ids=ids, labels=targets, shift_labels=targets).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        dt = clock() - t0
        if first_loss is None:
            first_loss = loss.item()
        if i > 0 or dt > budget:
            times.append(dt)
        if sum(times) > budget:
            break
    tokens = B * T
elif args["mode"] == "prefill":
    model.eval()
    with torch.no_grad():
        for i in range(steps + 1):
            t0 = clock()
            model(input_ids=ids, past_key_values=transformers.DynamicCache(config=model.config), use_cache=True, logits_to_keep=1)
            if i > 0:
                times.append(clock() - t0)
    tokens = B * T
else:  # decode: prefill the T tokens, then time one-token steps of the whole batch
    model.eval()
    with torch.no_grad():
        cache = transformers.DynamicCache(config=model.config)
        model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
        tok = ids[:, -1:]
        for i in range(steps + 1):
            t0 = clock()
            model(input_ids=tok, past_key_values=cache, use_cache=True, logits_to_keep=1)
            if i > 0:
                times.append(clock() - t0)
    tokens = B
times.sort()
med = times[len(times) // 2]
print(json.dumps({"seconds": med, "tokens_per_s": tokens / med, "loss": first_loss, "torch": torch.__version__,
                  "transformers": transformers.__version__, "threads": torch.get_num_threads()}))
