import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.ml.scores import ML
from onnxplug.providers.numpy.registry import op

_TYPES = {"TO_FLOAT": np.float32, "TO_INT64": np.int64, "TO_STRING": object}


@op("CastMap", domain=ML)
class CastMap(NumpyKernel):
    """A map int64 -> (string | float) as a [1, N] tensor in key order (DENSE), or [1, max_map] with
    value k at index k and padding elsewhere (SPARSE), as onnxruntime."""

    def compute(self, x):
        to = self.attr("cast_to", "TO_FLOAT")
        if to not in _TYPES:
            raise ValueError(f"CastMap: unknown cast_to {to!r} (TO_FLOAT, TO_STRING or TO_INT64)")
        keys = sorted(x)
        if self.attr("map_form", "DENSE") == "DENSE":
            values = [x[k] for k in keys]
        else:
            if keys and keys[0] < 0:
                raise ValueError(f"CastMap: negative key {keys[0]} in a SPARSE map")
            pad = "0.f" if to == "TO_STRING" else 0
            values = [x.get(k, pad) for k in range(self.attr("max_map", 1))]
        if to == "TO_STRING":
            out = [v if isinstance(v, str) else f"{float(v):f}" for v in values]
        elif to == "TO_INT64":  # strings parse as integers, floats truncate toward zero
            out = [int(v) if isinstance(v, str) else int(np.float32(v)) for v in values]
        else:
            out = [float(v) for v in values]
        return np.array(out, dtype=_TYPES[to]).reshape(1, len(out))
