import re

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("RegexFullMatch")
class RegexFullMatch(NumpyKernel):
    """Whether each string fully matches ``pattern`` (re2 syntax; Python's ``re`` accepts it)."""

    def __init__(self, node, context):
        super().__init__(node, context)
        pattern = self.attr("pattern", "")
        try:
            self._regex = re.compile(pattern)
        except re.error as e:
            raise ValueError(f"RegexFullMatch: invalid pattern {pattern!r}: {e}") from None

    def compute(self, x):
        match = self._regex.fullmatch
        return np.array([match(s) is not None for s in x.reshape(-1)], dtype=np.bool_).reshape(x.shape)
