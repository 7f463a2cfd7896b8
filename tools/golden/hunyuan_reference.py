"""Imports module files of the official HunyuanVideo code (Tencent/HunyuanVideo, checked out at
$HUNYUAN_REPO) without running hyvideo/__init__.py or hyvideo/modules/__init__.py, which pull the
pipelines, the VAE and the text encoders. The golden scripts share this one loader.

    from hunyuan_reference import load
    models = load("hyvideo.modules.models")      # hyvideo/modules/models.py
"""
import importlib
import os
import sys
import types

HUNYUAN_REPO = os.environ.get("HUNYUAN_REPO", "/work/ref/hunyuan")


def package(name):
    """An empty package `name` ("hyvideo", "hyvideo.modules", ...) whose submodules load from the
    repository's folder of that name."""
    if name not in sys.modules:
        m = types.ModuleType(name)
        m.__path__ = [os.path.join(HUNYUAN_REPO, *name.split("."))]
        sys.modules[name] = m
    return sys.modules[name]


def load(name):
    """The module `name` ("hyvideo.modules.models", ...) from its file, its parent packages stubbed."""
    parts = name.split(".")
    for i in range(1, len(parts)):
        package(".".join(parts[:i]))
    package("hyvideo.utils")  # modules import ..utils.helpers
    return importlib.import_module(name)


def save_golden(path, tensors, meta):
    """Writes a golden file (hunyuan_text.py, hunyuan15_text.py): each tensor detached, contiguous,
    int64 kept and the rest as float32, under `meta`; prints its size."""
    import torch
    from safetensors.torch import save_file
    out = {}
    for k, v in tensors.items():
        v = v.detach().contiguous().clone()
        out[k] = v if v.dtype == torch.int64 else v.to(torch.float32)
    save_file(out, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(out)} tensors)")
