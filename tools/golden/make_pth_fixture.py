#!/usr/bin/env python3
"""Writes the torch.save fixtures read by tests/io/test_torch.cpp.

Run with /work/pyenv/bin/python (torch, safetensors) from the repo root:
    python tools/golden/make_pth_fixture.py [--out tests/io/data]

Outputs (all small):
  torch_fixture.pth            torch.save zip format (storages stored uncompressed)
  torch_fixture_deflate.pth    the same archive re-zipped with deflate (exercises the copying path)
  torch_fixture_p4.pth         the same with pickle_protocol=4 (STACK_GLOBAL, MEMOIZE, FRAME, ...)
  torch_fixture_legacy.pth     torch.save(..., _use_new_zipfile_serialization=False)
  gguf_fixture.gguf            F32/F16/BF16/I32 tensors and metadata, written by the gguf
                               package (llama.cpp's writer; needs `pip install gguf`),
                               values also in the expected file under "gguf.<name>"
  torch_fixture_expected.safetensors
                               every tensor, made contiguous, under its flattened
                               name, written by the safetensors package
"""
import argparse
import collections
import os
import zipfile

import torch
from safetensors.torch import save_file


def build_state():
    g = torch.Generator().manual_seed(1234)
    sd = collections.OrderedDict()
    sd["w_bf16"] = torch.randn(3, 5, generator=g).to(torch.bfloat16)
    sd["w_f16"] = torch.randn(4, 2, generator=g).to(torch.float16)
    sd["w_f32"] = torch.randn(2, 3, 4, generator=g)
    sd["w_f64"] = torch.randn(5, generator=g).double()
    sd["ids_i64"] = torch.tensor([0, -1, 2**40, -(2**62), 7], dtype=torch.int64)
    sd["i32"] = torch.tensor([1, -2, 2**30], dtype=torch.int32)
    sd["i16"] = torch.tensor([-300, 300], dtype=torch.int16)
    sd["i8"] = torch.tensor([-128, 127, 0], dtype=torch.int8)
    sd["u8"] = torch.tensor([0, 255, 17], dtype=torch.uint8)
    sd["mask"] = torch.tensor([True, False, True])
    # dtypes without a legacy typed-storage class: torch writes _rebuild_tensor_v3 + UntypedStorage
    sd["f8_e4m3"] = torch.tensor([0.5, -448.0, 3.0], dtype=torch.float8_e4m3fn)
    sd["f8_e5m2"] = torch.tensor([0.25, -57344.0, 1.5], dtype=torch.float8_e5m2)
    sd["u16"] = torch.tensor([0, 65535, 1234], dtype=torch.uint16)
    # two tensors sharing one storage; the second starts at a storage offset
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4) * 0.5
    sd["shared_full"] = base
    sd["shared_row1"] = base[1]
    # a view into the middle of another storage
    other = torch.randn(10, generator=g)
    sd["offset_view"] = other[3:8]
    # non-contiguous: a transpose and a strided slice
    sd["transposed"] = torch.randn(3, 4, generator=g).t()
    sd["strided"] = torch.randn(4, 6, generator=g)[:, ::2]
    # 0-d and empty
    sd["scalar"] = torch.tensor(2.5, dtype=torch.float32)
    sd["empty"] = torch.zeros(0, 3)
    sd._metadata = {"": {"version": 1}}  # as nn.Module.state_dict() sets it
    # the usual training-checkpoint wrapper: weights nested under a key, plus non-tensors
    # an nn.Parameter pickles through torch._utils._rebuild_parameter
    return {"state_dict": sd, "param": torch.nn.Parameter(torch.randn(2, 2, generator=g)), "step": 7, "note": "fixture", "blob": b"\x00\xffraw",
            "nested": {"list": [torch.tensor([1.0, 2.0]), (torch.tensor([3], dtype=torch.int64),)]}}


def flatten(obj, prefix=""):
    out = {}
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = ((str(i), v) for i, v in enumerate(obj))
    elif isinstance(obj, torch.Tensor):
        return {prefix: obj}
    else:
        return {}
    for k, v in items:
        out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def write_gguf(path, expected):
    import gguf  # only this fixture needs it
    g = torch.Generator().manual_seed(99)
    tensors = {
        "blk.0.w_f32": torch.randn(3, 4, generator=g),
        "blk.0.w_f16": torch.randn(2, 5, generator=g).half(),
        "blk.0.w_bf16": torch.randn(7, generator=g).bfloat16(),
        "ids_i32": torch.tensor([[1, -2], [3, 2**31 - 1]], dtype=torch.int32),
    }
    w = gguf.GGUFWriter(path, arch="vidaxtest")
    w.add_string("general.name", "io fixture")
    w.add_uint32("vidaxtest.block_count", 1)
    w.add_float32("vidaxtest.eps", 0.5)
    w.add_bool("vidaxtest.flag", True)
    w.add_array("vidaxtest.list", [1, 2, 3])
    for name, t in tensors.items():
        if t.dtype == torch.bfloat16:  # numpy has no bf16: hand over the raw bits
            w.add_tensor(name, t.view(torch.int16).numpy(), raw_shape=list(t.shape),
                         raw_dtype=gguf.GGMLQuantizationType.BF16)
        else:
            w.add_tensor(name, t.numpy())
        expected["gguf." + name] = t.contiguous().clone()
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/io/data")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    state = build_state()

    zip_path = os.path.join(args.out, "torch_fixture.pth")
    torch.save(state, zip_path)

    p4_path = os.path.join(args.out, "torch_fixture_p4.pth")
    torch.save(state, p4_path, pickle_protocol=4)

    # Same members, deflated (torch.load reads these too).
    deflate_path = os.path.join(args.out, "torch_fixture_deflate.pth")
    with zipfile.ZipFile(zip_path) as src, zipfile.ZipFile(deflate_path, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))

    legacy_path = os.path.join(args.out, "torch_fixture_legacy.pth")
    legacy_state = {"state_dict": collections.OrderedDict(
        (k, v) for k, v in state["state_dict"].items()
        if v.dtype not in (torch.float8_e4m3fn, torch.float8_e5m2, torch.uint16))}
    torch.save(legacy_state, legacy_path, _use_new_zipfile_serialization=False)

    expected = {k: v.contiguous().clone() for k, v in flatten(state).items()}
    write_gguf(os.path.join(args.out, "gguf_fixture.gguf"), expected)
    save_file(expected, os.path.join(args.out, "torch_fixture_expected.safetensors"),
              metadata={"kind": "io.torch_fixture", "torch_version": torch.__version__})

    # Check every file loads in torch itself, with the safe unpickler, to the expected values.
    for path in (zip_path, p4_path, deflate_path, legacy_path):
        # torch's weights_only unpickler lacks protocol 4's FRAME opcode; the file is our own.
        loaded = flatten(torch.load(path, weights_only=path != p4_path))
        for k, v in loaded.items():
            assert v.dtype == expected[k].dtype and v.shape == expected[k].shape, (path, k)
            assert torch.equal(v.contiguous().reshape(-1).view(torch.uint8), expected[k].reshape(-1).view(torch.uint8)), (path, k)
    print("wrote", zip_path, p4_path, deflate_path, legacy_path, "and the expected values:", len(expected), "tensors")


if __name__ == "__main__":
    main()
