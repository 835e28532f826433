"""transformers' rendering and tokenization of chat conversations, for the chat-template parity test.

Generator command (run live by src/layouts.test.ts through the Python peers):

    python3 hf_chat.py MODEL_DIR CASES.json OUT.json

CASES.json: [{"messages": [...], "tools": [...] | null, "add_generation_prompt": bool,
"enable_thinking": bool}]. For each case OUT.json gets {"text": apply_chat_template(..., tokenize=False),
"ids": the tokenizer's ids of that text without added special tokens}.
"""
import json
import sys

from transformers import AutoTokenizer

tok = AutoTokenizer.from_pretrained(sys.argv[1])
out = []
for case in json.load(open(sys.argv[2])):
    text = tok.apply_chat_template(case["messages"], tools=case.get("tools"), add_generation_prompt=case["add_generation_prompt"],
                                   enable_thinking=case["enable_thinking"], tokenize=False)
    out.append({"text": text, "ids": tok(text, add_special_tokens=False)["input_ids"]})
json.dump(out, open(sys.argv[3], "w"))
