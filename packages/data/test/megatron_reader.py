"""Independent numpy reader of a Megatron-LM indexed dataset (.idx/.bin), written from the
layout of megatron/core/datasets/indexed_dataset.py (_IndexWriter / _IndexReader):
  9-byte magic b"MMIDIDX\\x00\\x00", <Q version (1), <B dtype code, <Q sequence count,
  <Q document count, int32[S] sequence lengths, int64[S] sequence pointers (bytes),
  int64[D] document indices; .bin = raw tokens of that dtype.
Prints a JSON summary per prefix. Used once to check the golden files under test/golden.
"""
import json
import struct
import sys

import numpy as np

DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32, 8: np.uint16}

for prefix in sys.argv[1:]:
    idx = open(prefix + ".idx", "rb").read()
    assert idx[:9] == b"MMIDIDX\x00\x00", "bad magic"
    (version,) = struct.unpack("<Q", idx[9:17])
    (code,) = struct.unpack("<B", idx[17:18])
    seq_count, doc_count = struct.unpack("<QQ", idx[18:34])
    offset = 34
    lengths = np.frombuffer(idx, dtype=np.int32, count=seq_count, offset=offset)
    offset += lengths.nbytes
    pointers = np.frombuffer(idx, dtype=np.int64, count=seq_count, offset=offset)
    offset += pointers.nbytes
    docs = np.frombuffer(idx, dtype=np.int64, count=doc_count, offset=offset)
    offset += docs.nbytes
    assert offset == len(idx), "trailing bytes in .idx"
    dtype = DTYPES[code]
    data = np.memmap(prefix + ".bin", mode="r", dtype=np.uint8)
    itemsize = np.dtype(dtype).itemsize
    assert data.size == int((lengths.astype(np.int64) * itemsize).sum()), ".bin size mismatch"
    seqs = [np.frombuffer(data, dtype=dtype, count=int(n), offset=int(p)).tolist() for n, p in zip(lengths, pointers)]
    print(json.dumps({
        "prefix": prefix.split("/")[-1], "version": version, "dtype": np.dtype(dtype).name, "code": code,
        "sequence_count": seq_count, "document_count": doc_count, "sequence_lengths": lengths.tolist(),
        "sequence_pointers": pointers.tolist(), "document_indices": docs.tolist(), "sequences": seqs,
        "idx_bytes": len(idx), "bin_bytes": int(data.size),
    }))
