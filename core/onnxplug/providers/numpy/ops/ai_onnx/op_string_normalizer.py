import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("StringNormalizer")
class StringNormalizer(NumpyKernel):
    """Drop stopword elements of a [C] or [1, C] string tensor, then lower/upper-case the rest.

    When every element is dropped the result is [""] (shape [1] or [1, 1]), as the spec says.
    """

    def __init__(self, node, context):
        super().__init__(node, context)
        self._case = self.attr("case_change_action", "NONE")
        if self._case not in ("NONE", "LOWER", "UPPER"):
            raise ValueError(f"StringNormalizer: unknown case_change_action {self._case!r}")
        self._sensitive = bool(self.attr("is_case_sensitive", 0))
        words = self.attr("stopwords") or []
        self._stops = set(words) if self._sensitive else {w.lower() for w in words}

    def compute(self, x):
        if x.ndim not in (1, 2) or (x.ndim == 2 and x.shape[0] != 1):
            raise ValueError(f"StringNormalizer takes a [C] or [1, C] tensor, got shape {list(x.shape)}")
        key = (lambda s: s) if self._sensitive else str.lower
        kept = [s for s in x.reshape(-1) if key(s) not in self._stops]
        if self._case == "LOWER":
            kept = [s.lower() for s in kept]
        elif self._case == "UPPER":
            kept = [s.upper() for s in kept]
        out = np.array(kept or [""], dtype=object)
        return out.reshape(1, -1) if x.ndim == 2 else out
