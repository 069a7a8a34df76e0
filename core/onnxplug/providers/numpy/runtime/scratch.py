"""Scratch memory each thread keeps across kernel calls: one growing buffer per dtype
(``ThreadScratch``), or arrays kept per shape in a per-thread dictionary with a budget
(``kept_scratch`` and ``keep``)."""

from __future__ import annotations

import threading

import numpy as np


class ThreadScratch:
    """One buffer per thread and dtype, grown on demand and kept across calls while at most
    ``kept_bytes``: fresh multi-MB temporaries are at the mercy of malloc's trimming, which can
    return their pages to the system and fault them back in on every call."""

    def __init__(self, kept_bytes: int) -> None:
        self.kept_bytes = kept_bytes
        self._local = threading.local()

    def get(self, dtype: np.dtype, size: int) -> np.ndarray:
        """``size`` elements of ``dtype``; their contents are whatever the thread left there."""
        buffers = getattr(self._local, "buffers", None)
        if buffers is None:
            buffers = self._local.buffers = {}
        buf = buffers.get(dtype)
        if buf is None or buf.size < size:
            buf = np.empty(size, dtype=dtype)
            if size * buf.itemsize <= self.kept_bytes:  # larger ones (huge images) are not kept
                buffers[dtype] = buf
        return buf[:size]


#: Arrays of at most this many bytes are kept per thread and shape; at most SCRATCH_KEEP_TOTAL_BYTES
#: and KEEP_SHAPES shapes in each kept_scratch dictionary (padded rows, 1x1 columns).
SCRATCH_KEEP_SHAPE_BYTES = 8 << 20
SCRATCH_KEEP_TOTAL_BYTES = 32 << 20
KEEP_SHAPES = 32


def kept_scratch(local: threading.local) -> dict:
    """This thread's dictionary of kept scratch (``nbytes`` under the key None)."""
    kept = getattr(local, "kept", None)
    if kept is None:
        kept = local.kept = {None: 0}
    return kept


def keep(kept: dict, key: tuple, value: object, nbytes: int) -> None:
    """Keep ``value`` under ``key``, first dropping everything kept when a budget would be exceeded
    (a value larger than the whole byte budget is not kept)."""
    if nbytes > SCRATCH_KEEP_TOTAL_BYTES:
        return
    if len(kept) > KEEP_SHAPES or kept[None] + nbytes > SCRATCH_KEEP_TOTAL_BYTES:
        kept.clear()
        kept[None] = 0
    kept[key] = value
    kept[None] += nbytes
