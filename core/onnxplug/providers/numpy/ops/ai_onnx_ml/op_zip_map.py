from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.ml.scores import ML, as_rows
from onnxplug.providers.numpy.registry import op


@op("ZipMap", domain=ML)
class ZipMap(NumpyKernel):
    """[N, C] scores -> a sequence of N maps {class label: score}."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self._labels = list(self.attr("classlabels_strings") or self.attr("classlabels_int64s") or [])

    def compute(self, x):
        labels = self._labels
        rows = as_rows(x)
        if rows.shape[1] != len(labels):
            raise ValueError(f"ZipMap: {rows.shape[1]} columns for {len(labels)} class labels")
        return [dict(zip(labels, row)) for row in rows.tolist()]
