# Independent numpy implementation of the ggml block formats, written from the format description
# (ggml-common.h block layouts, ggml-quants.c reference (de)quantizers), used as the test oracle
# of the quantizers of this folder (quantize.test.ts). All arithmetic is float32 as in ggml.
#
#   python3 blocks_reference.py <dir>
# reads <dir>/<case>.in (float32 values for quantize_*, raw blocks for dequantize_*) for every
# case listed in <dir>/cases.txt ("<op> <type>" per line) and writes <dir>/<case>.out.
import sys, os
import numpy as np

f32, f16 = np.float32, np.float16

def rint(x):
    return np.rint(x)  # ties to even

def quantize_q8_0(x):
    x = x.reshape(-1, 32)
    amax = np.abs(x).max(axis=1)
    d = (amax / f32(127)).astype(f32)
    idv = np.where(d != 0, f32(1) / np.where(d != 0, d, f32(1)), f32(0)).astype(f32)
    v = (x * idv[:, None]).astype(f32)
    q = (np.sign(v) * np.floor(np.abs(v) + f32(0.5))).astype(np.int8)
    out = np.zeros(len(x), dtype=[('d', '<f2'), ('qs', 'i1', 32)])
    out['d'] = d.astype(f16); out['qs'] = q
    return out.tobytes()

def quantize_q4_0(x):
    x = x.reshape(-1, 32)
    idx = np.abs(x).argmax(axis=1)
    mx = x[np.arange(len(x)), idx]
    d = (mx / f32(-8)).astype(f32)
    idv = np.where(d != 0, f32(1) / np.where(d != 0, d, f32(1)), f32(0)).astype(f32)
    v = ((x * idv[:, None]).astype(f32) + f32(8.5)).astype(f32)
    q = np.minimum(15, np.trunc(v).astype(np.int32)).astype(np.uint8)
    out = np.zeros(len(x), dtype=[('d', '<f2'), ('qs', 'u1', 16)])
    out['d'] = d.astype(f16); out['qs'] = q[:, :16] | (q[:, 16:] << 4)
    return out.tobytes()

def dequantize_q8_0(b):
    blk = np.frombuffer(b, dtype=[('d', '<f2'), ('qs', 'i1', 32)])
    return (blk['d'].astype(f32)[:, None] * blk['qs'].astype(f32)).astype(f32).ravel()

def dequantize_q4_0(b):
    blk = np.frombuffer(b, dtype=[('d', '<f2'), ('qs', 'u1', 16)])
    q = np.concatenate([blk['qs'] & 0xF, blk['qs'] >> 4], axis=1).astype(np.int32) - 8
    return (q.astype(f32) * blk['d'].astype(f32)[:, None]).astype(f32).ravel()

def scale_min_k4(s, j):
    if j < 4:
        return s[:, j] & 63, s[:, j + 4] & 63
    return (s[:, j + 4] & 0xF) | ((s[:, j - 4] >> 6) << 4), (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)

def dequantize_q4_k(b):
    blk = np.frombuffer(b, dtype=[('d', '<f2'), ('dmin', '<f2'), ('scales', 'u1', 12), ('qs', 'u1', 128)])
    d, dmin = blk['d'].astype(f32)[:, None], blk['dmin'].astype(f32)[:, None]
    y = np.zeros((len(blk), 256), dtype=f32)
    for c in range(4):
        qs = blk['qs'][:, 32 * c:32 * c + 32]
        for half, q in ((0, qs & 0xF), (1, qs >> 4)):
            sc, m = scale_min_k4(blk['scales'], 2 * c + half)
            d1 = (d * sc[:, None].astype(f32)).astype(f32)
            m1 = (dmin * m[:, None].astype(f32)).astype(f32)
            y[:, 64 * c + 32 * half:64 * c + 32 * half + 32] = ((d1 * q.astype(f32)).astype(f32) - m1).astype(f32)
    return y.ravel()

def dequantize_q6_k(b):
    blk = np.frombuffer(b, dtype=[('ql', 'u1', 128), ('qh', 'u1', 64), ('scales', 'i1', 16), ('d', '<f2')])
    d = blk['d'].astype(f32)[:, None]
    y = np.zeros((len(blk), 256), dtype=f32)
    for h in range(2):
        ql = blk['ql'][:, 64 * h:64 * h + 64].astype(np.int32)
        qh = blk['qh'][:, 32 * h:32 * h + 32].astype(np.int32)
        sc = blk['scales'][:, 8 * h:8 * h + 8].astype(f32)
        qs = [
            (ql[:, :32] & 0xF) | ((qh & 3) << 4),
            (ql[:, 32:] & 0xF) | (((qh >> 2) & 3) << 4),
            (ql[:, :32] >> 4) | (((qh >> 4) & 3) << 4),
            (ql[:, 32:] >> 4) | (((qh >> 6) & 3) << 4),
        ]
        for k in range(4):
            for l in range(32):
                s = (d[:, 0] * sc[:, l // 16 + 2 * k]).astype(f32)
                y[:, 128 * h + 32 * k + l] = (s * (qs[k][:, l] - 32).astype(f32)).astype(f32)
    return y.ravel()

def round_q8_k(x):
    # quantize_row_q8_K_ref then dequantize: per 256 values d = 1/(-127/max) of the signed extreme.
    x = x.reshape(-1, 256)
    idx = np.abs(x).argmax(axis=1)
    mx = x[np.arange(len(x)), idx]
    y = np.zeros_like(x)
    for b in range(len(x)):
        if mx[b] == 0:
            continue
        iscale = f32(f32(-127) / mx[b])
        d = f32(f32(1) / iscale)
        q = np.minimum(127, rint((iscale * x[b]).astype(f32)))
        y[b] = (d * q.astype(f32)).astype(f32)
    return y.ravel()

def round_q8_0(x):
    # ggml's x86 quantize_row_q8_0: d = amax/127 (stored f16), id = 127/amax, q = rint(x*id).
    x = x.reshape(-1, 32)
    amax = np.abs(x).max(axis=1)
    d = (amax / f32(127)).astype(f32).astype(f16).astype(f32)
    idv = np.where(amax != 0, f32(127) / np.where(amax != 0, amax, f32(1)), f32(0)).astype(f32)
    q = rint((x * idv[:, None]).astype(f32))
    return (d[:, None] * q.astype(f32)).astype(f32).ravel()

OPS = {
    'quantize': {'Q8_0': quantize_q8_0, 'Q4_0': quantize_q4_0},
    'round': {'Q8_K': round_q8_k, 'Q8_0': round_q8_0},
    'dequantize': {'Q8_0': dequantize_q8_0, 'Q4_0': dequantize_q4_0, 'Q4_K': dequantize_q4_k, 'Q6_K': dequantize_q6_k},
}

if __name__ == '__main__':
    root = sys.argv[1]
    for line in open(os.path.join(root, 'cases.txt')):
        name, op, typ = line.split()
        data = open(os.path.join(root, name + '.in'), 'rb').read()
        arg = np.frombuffer(data, dtype=f32) if op in ('quantize', 'round') else data
        res = OPS[op][typ](arg)
        open(os.path.join(root, name + '.out'), 'wb').write(res if isinstance(res, bytes) else res.astype('<f4').tobytes())
