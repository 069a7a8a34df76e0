"""Random-op helpers: a generator per call (kernels stay stateless) and the output dtype rules."""

from __future__ import annotations

import numpy as np

from onnxplug.ir.types import numpy_dtype
from onnxplug.kernel import Kernel
from onnxplug.seeding import default_seed


def generator(kernel: Kernel) -> np.random.Generator:
    """A fresh generator: seeded from the ``seed`` attribute (same draws every run), else from
    ``onnxplug.set_seed``'s seed (likewise), else from the OS.

    A new generator per call keeps ``compute`` free of shared state across threads.
    """
    seed = kernel.attr("seed")
    if seed is None:
        fallback = default_seed()
        return np.random.default_rng(None if fallback is None else fallback % 2 ** 64)
    return np.random.default_rng(np.frombuffer(np.float32(seed).tobytes(), dtype=np.uint32))


def random_dtype(kernel: Kernel, like: np.ndarray | None = None, default: int = 1) -> np.dtype:
    """The ``dtype`` attribute's numpy type; else the input's type (``*Like`` ops), else ``default``."""
    dt = kernel.attr("dtype")
    if dt is not None:
        return numpy_dtype(dt)
    return like.dtype if like is not None else numpy_dtype(default)
