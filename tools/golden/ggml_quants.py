"""Golden file for ggml's block formats (src/core/quant.h), made with the PyPI `gguf` package
(gguf.quants, pinned in requirements.txt), the Python port of ggml's definitions.

For every type T of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K:
  T.blocks   U8  [rows, row_bytes]  random but valid block bytes (every f16 scale finite, a few
                                     blocks all zero), rows of 512 values
  T.dequant  F32 [rows, 512]        gguf.quants.dequantize(T.blocks)
and, where gguf.quants implements the quantizer (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0):
  T.quant    U8  [rows, row_bytes]  gguf.quants.quantize(input)
input        F32 [rows, 512]        the values quantized (normal, a zero row, an outlier row,
                                     a constant row, tiny values); the C++ test quantizes it with
                                     every type (the K-quants checked by error bounds).

It also writes tests/io/data/gguf_quant_fixture.gguf with gguf.GGUFWriter (llama.cpp's writer):
quantized tensors blk.0.attn_q.weight (Q8_0 [4, 64], quantized by the package), blk.0.ffn.weight
(Q4_K [2, 512]), blk.0.out.weight (Q6_K [3, 256]), blk.0.lo.weight (Q5_0 [2, 64]) from golden
blocks, and blk.0.norm.weight (F32 [64]); gguf.<name> in the golden file holds each one's
dequantized values.

Usage: python tools/golden/ggml_quants.py [out.safetensors [out.gguf]]
"""
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf import quants
from safetensors.numpy import save_file

ROWS, N = 6, 512

# type -> (bytes per block, values per block, byte offsets of the f16 fields)
TYPES = {
    "Q4_0": (Q.Q4_0, 18, 32, [0]),
    "Q4_1": (Q.Q4_1, 20, 32, [0, 2]),
    "Q5_0": (Q.Q5_0, 22, 32, [0]),
    "Q5_1": (Q.Q5_1, 24, 32, [0, 2]),
    "Q8_0": (Q.Q8_0, 34, 32, [0]),
    "Q2_K": (Q.Q2_K, 84, 256, [80, 82]),
    "Q3_K": (Q.Q3_K, 110, 256, [108]),
    "Q4_K": (Q.Q4_K, 144, 256, [0, 2]),
    "Q5_K": (Q.Q5_K, 176, 256, [0, 2]),
    "Q6_K": (Q.Q6_K, 210, 256, [208]),
}
QUANTIZERS = {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"}


def random_blocks(rs, bpb, bs, f16_offsets):
    nblocks = ROWS * N // bs
    b = rs.randint(0, 256, size=(nblocks, bpb)).astype(np.uint8)
    for off in f16_offsets:
        mag = 10 ** rs.uniform(-5, 0, nblocks)
        v = (mag * rs.choice([-1, 1], nblocks)).astype(np.float16)
        b[:, off:off + 2] = v.view(np.uint8).reshape(nblocks, 2)
    b[:: max(1, nblocks // 3)] = 0  # a few all-zero blocks
    return b.reshape(ROWS, -1)


def make_input(rs):
    x = rs.standard_normal((ROWS, N)).astype(np.float32) * 0.05
    x[1] = 0.0
    x[2, ::37] = 3.0  # outliers
    x[3] = -0.25
    x[4] *= 1e-4
    x[5] = rs.uniform(-1, 1, N).astype(np.float32)
    return x


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "../../tests/io/data/ggml_quants.safetensors")
    rs = np.random.RandomState(17)
    x = make_input(rs)
    tensors = {"input": x}
    for name, (qt, bpb, bs, offs) in TYPES.items():
        blocks = random_blocks(rs, bpb, bs, offs)
        deq = quants.dequantize(blocks, qt).astype(np.float32)
        assert deq.shape == (ROWS, N) and np.isfinite(deq).all(), name
        tensors[name + ".blocks"] = np.ascontiguousarray(blocks)
        tensors[name + ".dequant"] = np.ascontiguousarray(deq)
        if name in QUANTIZERS:
            q = quants.quantize(x, qt)
            assert q.shape == (ROWS, N // bs * bpb), name
            tensors[name + ".quant"] = np.ascontiguousarray(q.astype(np.uint8))
    gguf_out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "../../tests/io/data/gguf_quant_fixture.gguf")
    w = gguf.GGUFWriter(gguf_out, "vidaxtest")
    w.add_name("quant fixture")
    fixture = {
        "blk.0.attn_q.weight": (Q.Q8_0, quants.quantize(x[:4, :64].copy(), Q.Q8_0), (4, 64)),
        "blk.0.ffn.weight": (Q.Q4_K, tensors["Q4_K.blocks"][:2], (2, 512)),
        "blk.0.out.weight": (Q.Q6_K, tensors["Q6_K.blocks"][:3, :210], (3, 256)),
        "blk.0.lo.weight": (Q.Q5_0, tensors["Q5_0.blocks"][:2, :44], (2, 64)),
    }
    for name, (qt, raw, shape) in fixture.items():
        raw = np.ascontiguousarray(raw)
        w.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=qt)
        tensors["gguf." + name] = np.ascontiguousarray(quants.dequantize(raw, qt).astype(np.float32).reshape(shape))
    norm = x[5, :64].copy()
    w.add_tensor("blk.0.norm.weight", norm)
    tensors["gguf.blk.0.norm.weight"] = norm
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    save_file(tensors, out)
    print("wrote", out, sum(v.nbytes for v in tensors.values()), "bytes, and", gguf_out)


if __name__ == "__main__":
    main()
