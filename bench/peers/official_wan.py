"""Imports modules of the official Wan 2.1 code from a checkout ($WAN21_REPO, default
/work/ref/Wan2.1) without running its package __init__ files, which pull optional
dependencies the peers do not need. Shared by the peer scripts in this folder."""
import importlib
import os
import sys
import types

WAN21_REPO = os.environ.get("WAN21_REPO", "/work/ref/Wan2.1")


def import_official(name):
    """import_official("wan.modules.model") -> that module of the official code."""
    if WAN21_REPO not in sys.path:
        sys.path.insert(0, WAN21_REPO)
    for pkg, sub in (("wan", "wan"), ("wan.modules", "wan/modules")):
        if pkg not in sys.modules:
            m = types.ModuleType(pkg)
            m.__path__ = [os.path.join(WAN21_REPO, sub)]
            sys.modules[pkg] = m
    return importlib.import_module(name)
