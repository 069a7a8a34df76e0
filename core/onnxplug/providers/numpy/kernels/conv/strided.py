"""Strided views for the kernels' hot loops, made with numpy's array constructor.

``numpy.lib.stride_tricks.as_strided`` builds its view through a Python-level ``DummyArray`` and
``__array_interface__``, several times the cost of ``np.ndarray(shape, dtype, buffer=base, ...)``.
The constructor needs a C-contiguous base, and refuses a view that would leave it
(``as_strided`` does not check); other bases still go through ``as_strided``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided


def strided_view(base: np.ndarray, shape: Sequence[int], strides: Sequence[int], offset: int = 0,
                 writeable: bool = False) -> np.ndarray:
    """A view of ``base``'s memory from its element ``offset`` on (flat order; a C-contiguous
    ``base`` only), with ``shape`` and byte ``strides``; read-only unless ``writeable``. Raises
    ValueError when a C-contiguous base does not hold the whole view."""
    if base.flags.c_contiguous:
        view = np.ndarray(tuple(shape), base.dtype, buffer=base, offset=offset * base.itemsize,
                          strides=tuple(strides))
        if not writeable:
            view.flags.writeable = False
        return view
    if offset:
        raise ValueError("an offset needs a C-contiguous base")
    return as_strided(base, tuple(shape), tuple(strides), writeable=writeable)
