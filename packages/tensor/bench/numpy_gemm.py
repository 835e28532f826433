"""numpy + OpenBLAS peer for bench/gemm.mjs.

A line-oriented server, so the JS side can time each case right after numpy, under the same
machine load: the first output line is a JSON object describing numpy and its BLAS; then for each
input line {"name", "M", "N", "K", "transA", "transB", "budget", "min_reps"} it prints
{"name", "seconds"} with the best time. A case is timed like on the JS side: one warm-up call,
then calls until `budget` seconds have passed (at least `min_reps`), keeping the fastest.
Operands are float32 and C-contiguous in the stored layout, so A.T / B.T are transposed views that
numpy hands to sgemm as transpose flags. Set OPENBLAS_NUM_THREADS to fix the thread count.
"""
import json
import os
import sys
import time

import numpy as np


def blas_libs():
    """The BLAS libraries numpy has loaded (Debian resolves libblas.so.3 through alternatives)."""
    libs = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                if "blas" in path:
                    libs.add(os.path.realpath(path))
    except OSError:
        pass
    return sorted(libs)


def main():
    rng = np.random.default_rng(0)
    cache = {}  # operands by stored shape: the model cases share two weight shapes

    def operand(shape):
        if shape not in cache:
            if sum(a.size for a in cache.values()) > 3e8:
                cache.clear()
            cache[shape] = rng.standard_normal(shape, dtype=np.float32)
        return cache[shape]

    np.ones((4, 4), dtype=np.float32) @ np.ones((4, 4), dtype=np.float32)  # load BLAS
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    print(json.dumps({"numpy": np.__version__, "blas": blas_libs(), "threads": threads}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        c = json.loads(line)
        M, N, K = c["M"], c["N"], c["K"]
        A = operand((K, M) if c["transA"] else (M, K))
        B = operand((N, K) if c["transB"] else (K, N))
        opA = A.T if c["transA"] else A
        opB = B.T if c["transB"] else B
        C = np.empty((M, N), dtype=np.float32)
        np.matmul(opA, opB, out=C)
        # "clock": "cpu" times the process's CPU seconds (a loaded machine, one thread).
        clock = time.process_time if c.get("clock") == "cpu" else time.perf_counter
        best, reps, t0 = float("inf"), 0, time.perf_counter()
        while reps < c["min_reps"] or time.perf_counter() - t0 < c["budget"]:
            t = clock()
            np.matmul(opA, opB, out=C)
            best = min(best, clock() - t)
            reps += 1
        print(json.dumps({"name": c["name"], "seconds": best}), flush=True)


if __name__ == "__main__":
    main()
