"""llama.cpp itself as the reference of the GGUF writer: the ggml and llama libraries that
node-llama-cpp ships (its prebuilt linux-x64 CPU binaries), called through ctypes.

Usage (run live by the gguf tests through the Python peers):
    python3 ggml_reference.py LIB_DIR quantize DIR
        for each line "NAME TYPE" of DIR/cases.txt: DIR/NAME.f32 (float32 rows of a multiple of 256)
        quantized by ggml_quantize_chunk (no importance matrix: the *_ref quantizers) into DIR/NAME.out
    python3 ggml_reference.py LIB_DIR model_quantize IN.gguf OUT.gguf FTYPE
        llama_model_quantize (what llama-quantize runs) with its default parameters and FTYPE
        (llama_ftype: 7 Q8_0, 15 Q4_K_M, 17 Q5_K_M, 18 Q6_K), one thread
"""
import ctypes
import os
import sys

lib_dir, op = sys.argv[1], sys.argv[2]
GGML_TYPES = {"Q4_0": (2, 32, 18), "Q5_0": (6, 32, 22), "Q5_1": (7, 32, 24), "Q8_0": (8, 32, 34), "Q4_K": (12, 256, 144), "Q5_K": (13, 256, 176), "Q6_K": (14, 256, 210)}


def load(name):
    return ctypes.CDLL(os.path.join(lib_dir, name), mode=ctypes.RTLD_GLOBAL)


base = load("libggml-base.so")
if op == "quantize":
    base.ggml_quantize_init.argtypes = [ctypes.c_int]
    base.ggml_quantize_chunk.restype = ctypes.c_size_t
    base.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    d = sys.argv[3]
    for line in open(os.path.join(d, "cases.txt")).read().split("\n"):
        if not line:
            continue
        name, tname = line.split()
        t, qk, size = GGML_TYPES[tname]
        x = open(os.path.join(d, name + ".f32"), "rb").read()
        n = len(x) // 4
        src = ctypes.create_string_buffer(x, len(x))
        dst = ctypes.create_string_buffer(n // qk * size)
        base.ggml_quantize_init(t)
        wrote = base.ggml_quantize_chunk(t, src, dst, 0, 1, n, None)
        assert wrote == n // qk * size, (name, wrote)
        open(os.path.join(d, name + ".out"), "wb").write(dst.raw)
elif op == "model_quantize":
    load("libggml.v0.5.0.so")
    llama = load("libllama.v0.5.0.so")

    # llama_model_quantize_params (llama.h of this build): nthread, ftype, output_tensor_type,
    # token_embedding_type, six bools, four pointers, size_t max_buf_size.
    class Params(ctypes.Structure):
        _fields_ = [("nthread", ctypes.c_int32), ("ftype", ctypes.c_int32), ("output_tensor_type", ctypes.c_int32), ("token_embedding_type", ctypes.c_int32),
                    ("allow_requantize", ctypes.c_bool), ("quantize_output_tensor", ctypes.c_bool), ("only_copy", ctypes.c_bool), ("pure", ctypes.c_bool),
                    ("keep_split", ctypes.c_bool), ("dry_run", ctypes.c_bool), ("imatrix", ctypes.c_void_p), ("kv_overrides", ctypes.c_void_p),
                    ("tt_overrides", ctypes.c_void_p), ("prune_layers", ctypes.c_void_p), ("max_buf_size", ctypes.c_size_t)]

    llama.llama_model_quantize_default_params.restype = Params
    llama.llama_model_quantize.restype = ctypes.c_uint32
    llama.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(Params)]
    # llama.cpp logs every tensor it converts; a callback that drops the lines keeps the test output short.
    LOG = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
    quiet = LOG(lambda level, text, user: None)
    llama.llama_log_set(quiet, None)
    base.ggml_log_set(quiet, None)
    llama.llama_backend_init()
    p = llama.llama_model_quantize_default_params()
    assert p.quantize_output_tensor and not p.pure and p.output_tensor_type == p.token_embedding_type, "unexpected llama_model_quantize_params layout"
    p.nthread = 1
    p.ftype = int(sys.argv[5])
    rc = llama.llama_model_quantize(sys.argv[3].encode(), sys.argv[4].encode(), ctypes.byref(p))
    assert rc == 0, f"llama_model_quantize returned {rc}"
else:
    raise SystemExit(f"unknown op {op}")
