"""SessionOptions.enable_cpu_mem_arena: large freed blocks stay in the heap for the next run."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import onnxplug as ort
from onnxplug import host_memory

pytestmark = pytest.mark.skipif(not host_memory.arena_supported(), reason="needs glibc's mallopt")

# Allocate a 64 MB array in a fresh process after creating a session, and print how many bytes
# glibc then serves from mappings of their own (mallinfo2().hblkhd).
_PROBE = textwrap.dedent("""
    import ctypes, sys
    import numpy as np
    import onnxplug as ort
    from onnxplug.testing.model_suite import build

    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                    "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    so = ort.SessionOptions()
    so.enable_cpu_mem_arena = sys.argv[1] == "1"
    ort.InferenceSession(build("gru"), so, providers=["numpy"])
    before = libc.mallinfo2().hblkhd
    big = np.ones(16 << 20, np.float32)
    print(libc.mallinfo2().hblkhd - before)
""")


def _mapped_bytes_of_a_64mb_array(arena: bool) -> int:
    out = subprocess.run([sys.executable, "-c", _PROBE, "1" if arena else "0"], capture_output=True,
                         text=True, check=True)
    return int(out.stdout.split()[-1])


def test_with_the_arena_a_large_array_comes_from_the_heap():
    assert _mapped_bytes_of_a_64mb_array(arena=True) == 0


def test_without_the_arena_a_large_array_gets_its_own_mapping():
    assert _mapped_bytes_of_a_64mb_array(arena=False) >= 64 << 20


def test_a_session_without_the_arena_returns_free_memory_after_each_run(monkeypatch, add_relu_model):
    calls = []
    monkeypatch.setattr(host_memory, "release_free_memory", lambda: calls.append(1))
    x = np.ones((2, 4), np.float32)
    so = ort.SessionOptions()
    so.enable_cpu_mem_arena = False
    ort.InferenceSession(add_relu_model, so, providers=["numpy"]).run(None, {"x": x})
    assert calls == [1]
    ort.InferenceSession(add_relu_model, providers=["numpy"]).run(None, {"x": x})  # the default keeps it
    assert calls == [1]
