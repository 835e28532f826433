# Reference embeddings for /v1/embeddings: transformers' ApertusForCausalLM on the same checkpoint,
# its base model's last_hidden_state (after the final RMSNorm) pooled by mean and by last token,
# scaled to unit length, in float64. Usage: hidden_states.py MODEL_DIR INPUTS_JSON > OUTPUT_JSON
import json
import sys

import torch
from transformers import AutoModelForCausalLM

model_dir, inputs_file = sys.argv[1], sys.argv[2]
model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
out = []
with open(inputs_file) as f:
    inputs = json.load(f)
for ids in inputs:
    with torch.no_grad():
        h = model.model(input_ids=torch.tensor([ids])).last_hidden_state[0].double()
    mean, last = h.mean(0), h[-1]
    out.append({"mean": (mean / mean.norm()).tolist(), "last": (last / last.norm()).tolist()})
json.dump(out, sys.stdout)
