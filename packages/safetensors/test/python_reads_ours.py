#!/usr/bin/env python3
"""Python reads a file written by @apertus/safetensors.

Run from packages/safetensors after building (npx tsup):  /usr/bin/python3 test/python_reads_ours.py

Writes test-output via test/write-sample.mjs, then checks it in Python without our code:
an independent header parser (struct + json) checks the layout rules of the reference
(8-aligned space-padded header, __metadata__ first with format "pt", tensors ordered by
descending dtype enum then name, contiguous offsets, 8 + N + last_end == file size), numpy
decodes the values, torch decodes bf16. If the reference `safetensors` package is importable it
also loads the file with `safetensors.torch.load_file`. Prints one line per check; exits 1 on
any failure.
"""
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ORDER = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ",
         "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64"]
failures = 0


def check(label, ok):
    global failures
    print(("PASS " if ok else "FAIL ") + label)
    failures += 0 if ok else 1


def main():
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "ours.safetensors")
    subprocess.run(["node", os.path.join(HERE, "write-sample.mjs"), path], check=True)
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header_bytes = raw[8 : 8 + n]
    check("header length is a multiple of 8", n % 8 == 0)
    check("header starts with '{' and is padded only with spaces", header_bytes[:1] == b"{" and header_bytes.rstrip(b" ").endswith(b"}"))
    pairs = json.loads(header_bytes, object_pairs_hook=lambda kv: kv)
    keys = [k for k, _ in pairs]
    check("no duplicate keys", len(keys) == len(set(keys)))
    check("__metadata__ comes first", keys[0] == "__metadata__")
    header = {k: dict(v) if isinstance(v, list) else v for k, v in pairs}
    meta = dict(header["__metadata__"])
    check("metadata is {'format': 'pt', 'source': 'apertus'}", meta == {"format": "pt", "source": "apertus"})
    names = keys[1:]
    expected_order = sorted(names, key=lambda k: (-ORDER.index(header[k]["dtype"]), k.encode()))
    check("tensors ordered by descending dtype enum, then name", names == expected_order)
    cursor = 0
    bits = {d: b for d, b in zip(ORDER, [8, 4, 6, 6, 8, 8, 8, 8, 8, 8, 8, 16, 16, 16, 16, 32, 32, 32, 64, 64, 64, 64])}
    sizes_ok = True
    for k in names:
        info = header[k]
        begin, end = info["data_offsets"]
        sizes_ok &= begin == cursor and (end - begin) * 8 == math.prod(info["shape"]) * bits[info["dtype"]]
        cursor = end
    check("offsets contiguous from 0 and sizes equal numel * bits / 8", sizes_ok)
    check("8 + N + last_end == file size", 8 + n + cursor == len(raw))

    data = raw[8 + n :]

    def arr(name, np_dtype):
        b, e = header[name]["data_offsets"]
        return np.frombuffer(data[b:e], dtype=np_dtype).reshape(header[name]["shape"])

    check("F32 values", np.array_equal(arr("w.f32", "<f4"), (np.arange(15, dtype=np.float32) * 0.5 - 3).reshape(3, 5)))
    check("I64 values", arr("w.i64", "<i8").tolist() == [-(2**63), 5, 2**63 - 1])
    check("U8 values", arr("w.u8", "u1").tolist() == [0, 50, 100, 150, 200])
    check("F16 values", arr("w.f16", "<f2").tolist() == [1.0, -2.0])
    check("BOOL values", arr("w.bool", "u1").astype(bool).tolist() == [True, False, True])
    check("F64 values", arr("w.f64", "<f8").tolist() == [math.e, -math.pi])
    check("C64 values", arr("w.c64", "<c8").tolist() == [1.5 - 2j])
    check("F4 bytes", header["w.f4"]["shape"] == [4] and data[slice(*header["w.f4"]["data_offsets"])] == b"\x10\x32")
    check("scalar I32", header["scalar"]["shape"] == [] and arr("scalar", "<i4").item() == 7)
    check("empty F16", header["empty"]["shape"] == [0] and arr("empty", "<f2").size == 0)
    try:
        import torch

        b, e = header["w.bf16"]["data_offsets"]
        bf = torch.frombuffer(bytearray(data[b:e]), dtype=torch.bfloat16).float().tolist()
        check(f"BF16 values via torch {torch.__version__}", bf == [1.0, -2.0, 0.5, 3.140625])
    except ImportError:
        check("BF16 values via torch (torch not importable)", False)
    try:
        import safetensors
        from safetensors.torch import load_file

        loaded = load_file(path)
        check(f"reference safetensors {safetensors.__version__} loads it", sorted(loaded) == sorted(names))
    except ImportError:
        print("INFO reference `safetensors` Python package is not installed here; only the independent checks above ran")
    shutil.rmtree(tmp)
    print(f"{'FAILED' if failures else 'OK'}: {failures} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
