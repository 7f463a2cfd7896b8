"""Imports module files of the official Wan 2.1 code (Wan-Video/Wan2.1, checked out
at $WAN21_REPO) without running wan/__init__.py, which pulls the pipelines and
their optional dependencies. The golden scripts share this one loader.

    from wan_reference import load
    model = load("wan.modules.model")      # wan/modules/model.py
"""
import contextlib
import importlib
import os
import sys
import types

import torch

WAN21_REPO = os.environ.get("WAN21_REPO", "/work/ref/Wan2.1")
WAN22_REPO = os.environ.get("WAN22_REPO", "/work/ref/Wan2.2")


def use_wan22():
    """Loads the official Wan 2.2 code (Wan-Video/Wan2.2 at $WAN22_REPO) instead of Wan 2.1's; call
    before the first load() of the process (both trees are the package `wan`)."""
    global WAN21_REPO
    assert "wan" not in sys.modules, "use_wan22() must come before the first load()"
    WAN21_REPO = WAN22_REPO


def package(name):
    """An empty package `name` ("wan", "wan.modules", ...) whose submodules load from
    the repository's folder of that name."""
    if name not in sys.modules:
        m = types.ModuleType(name)
        m.__path__ = [os.path.join(WAN21_REPO, *name.split("."))]
        sys.modules[name] = m
    return sys.modules[name]


@contextlib.contextmanager
def cpu_current_device():
    """t5.py evaluates torch.cuda.current_device() as a default argument at import
    time; on a machine without a GPU that raises, so it answers "cpu" while
    importing (no math is touched)."""
    saved = torch.cuda.current_device
    torch.cuda.current_device = lambda: "cpu"
    try:
        yield
    finally:
        torch.cuda.current_device = saved


def load(name):
    """The module `name` ("wan.modules.t5", "wan.text2video", ...) from its file, with
    its parent packages stubbed by package()."""
    parts = name.split(".")
    for i in range(1, len(parts)):
        package(".".join(parts[:i]))
    with cpu_current_device():
        return importlib.import_module(name)
