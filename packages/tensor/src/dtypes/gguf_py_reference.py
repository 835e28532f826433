# gguf-py's dequantization (gguf.quants.dequantize, the peers venv) as the oracle for the block
# formats of this folder.
#
#   python gguf_py_reference.py golden <out.json>   random blocks of every format (seeded) and the
#                                                    sha256 of their float32 values: golden.json
#   python gguf_py_reference.py dequantize <dir>    <dir>/<case>.in (raw blocks) for every
#                                                    "<case> <TYPE>" line of <dir>/cases.txt ->
#                                                    <dir>/<case>.out (float32, little-endian)
import base64, hashlib, json, os, sys
import numpy as np
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType
from gguf.quants import dequantize

# Byte offsets of the f16 fields of each block (scales, mins): random finite values, never inf or NaN.
F16_FIELDS = {
    'Q4_0': [0], 'Q4_1': [0, 2], 'Q5_0': [0], 'Q5_1': [0, 2], 'Q8_0': [0], 'Q2_K': [80, 82], 'Q3_K': [108],
    'Q4_K': [0, 2], 'Q5_K': [0, 2], 'Q6_K': [208], 'IQ4_NL': [0], 'IQ4_XS': [0],
}

def random_blocks(name, n, rng):
    size = GGML_QUANT_SIZES[GGMLQuantizationType[name]][1]
    b = rng.integers(0, 256, size=(n, size), dtype=np.uint8)
    for o in F16_FIELDS[name]:
        bits = rng.integers(0, 0x10000, size=n, dtype=np.uint32)
        bits = np.where((bits & 0x7c00) == 0x7c00, bits & 0x83ff, bits)  # exponent 31 (inf/NaN) -> 0 (subnormal)
        b[:, o] = (bits & 0xff).astype(np.uint8)
        b[:, o + 1] = (bits >> 8).astype(np.uint8)
    return b

def values(name, blocks):
    return dequantize(blocks, GGMLQuantizationType[name]).astype('<f4').tobytes()

if __name__ == '__main__':
    mode = sys.argv[1]
    if mode == 'golden':
        rng = np.random.default_rng(20261201)
        out = {}
        for name in F16_FIELDS:
            blocks = random_blocks(name, 8, rng)
            out[name] = {'blocks': base64.b64encode(blocks.tobytes()).decode(), 'sha256': hashlib.sha256(values(name, blocks)).hexdigest()}
        with open(sys.argv[2], 'w') as f:
            json.dump(out, f, indent=1)
            f.write('\n')
    elif mode == 'dequantize':
        root = sys.argv[2]
        for line in open(os.path.join(root, 'cases.txt')):
            case, name = line.split()
            size = GGML_QUANT_SIZES[GGMLQuantizationType[name]][1]
            data = np.frombuffer(open(os.path.join(root, case + '.in'), 'rb').read(), dtype=np.uint8).reshape(-1, size)
            open(os.path.join(root, case + '.out'), 'wb').write(values(name, data))
    else:
        raise SystemExit(f'unknown mode {mode}')
