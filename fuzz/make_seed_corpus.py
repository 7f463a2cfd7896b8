#!/usr/bin/env python3
"""Writes the committed libFuzzer seed corpus (fuzz/corpus/*). Developer-time
only: /work/pyenv/bin/python fuzz/make_seed_corpus.py (torch, safetensors).
checkpoint_file/gguf_quant.gguf is tests/io/data/gguf_quant_fixture.gguf (block-quantized
tensors, written by tools/golden/ggml_quants.py), copied here by main()."""
import collections
import io
import json
import os
import pickle
import shutil
import struct
import zipfile

import torch
from safetensors.torch import save

HERE = os.path.dirname(os.path.abspath(__file__))


def write(kind, name, data):
    d = os.path.join(HERE, "corpus", kind)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def raw_safetensors(header, data=b""):
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


def main():
    shutil.copy(os.path.join(HERE, "..", "tests", "io", "data", "gguf_quant_fixture.gguf"),
                os.path.join(HERE, "corpus", "checkpoint_file", "gguf_quant.gguf"))
    g = torch.Generator().manual_seed(0)
    small = {"w": torch.randn(2, 3, generator=g), "b": torch.zeros(3, dtype=torch.bfloat16),
             "i": torch.arange(4), "m": torch.tensor([True, False]), "s": torch.tensor(1.0),
             "e": torch.zeros(0, 2), "f8": torch.zeros(2, dtype=torch.float8_e4m3fn)}
    write("safetensors_header", "small", save(small, metadata={"kind": "seed", "config": "{}"}))
    write("safetensors_header", "empty", raw_safetensors({}))
    write("safetensors_header", "metadata_only", raw_safetensors({"__metadata__": {"a": "b"}}))
    write("safetensors_header", "overlap", raw_safetensors(
        {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
         "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\0" * 12))
    write("safetensors_header", "bad_count", raw_safetensors(
        {"a": {"dtype": "F16", "shape": [3, 1], "data_offsets": [0, 8]}}, b"\0" * 8))

    # torch.save pickles, protocols 2 (the default) and 4
    sd = collections.OrderedDict(small)
    sd["t"] = torch.randn(3, 4, generator=g).t()
    sd["v"] = sd["w"].view(-1)[2:5]
    sd["u16"] = torch.zeros(2, dtype=torch.uint16)
    sd._metadata = {"": {"version": 1}}
    for proto in (2, 4):
        buf = io.BytesIO()
        torch.save({"model": sd, "step": 3, "blob": b"\x01\x02"}, buf, pickle_protocol=proto)
        with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
            name = [n for n in z.namelist() if n.endswith("data.pkl")][0]
            write("pickle", f"torch_save_p{proto}", z.read(name))
    write("pickle", "primitives_p2", pickle.dumps({"a": [1, -2, 3.5, True, None, "s", 2**70], "t": (1, (2,))}, 2))
    write("pickle", "primitives_p5", pickle.dumps({"a": [1, b"xy", bytearray(b"z"), {1, 2}, frozenset([3])]}, 5))
    write("pickle", "posix_system", b"\x80\x02cposix\nsystem\nX\x04\x00\x00\x00true\x85R.")
    write("pickle", "stack_global", b"\x80\x04\x8c\x02os\x8c\x06system\x93\x8c\x04true\x85R.")
    # whole files for fuzz_checkpoint_file: small torch.save outputs in both formats
    # (the committed corpus also holds copies of tests/io/data's fixtures)
    tiny = collections.OrderedDict(w=torch.arange(6.).reshape(2, 3), b=torch.ones(2, dtype=torch.bfloat16))
    tiny["t"] = tiny["w"].t()
    for legacy in (False, True):
        buf = io.BytesIO()
        torch.save(tiny, buf, _use_new_zipfile_serialization=not legacy)
        write("checkpoint_file", "small_legacy.pth" if legacy else "small.pth", buf.getvalue())
    print("seed corpus written under", os.path.join(HERE, "corpus"))


if __name__ == "__main__":
    main()
