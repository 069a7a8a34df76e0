"""GatherND on numba (one compiled pass) against onnxruntime, bitwise, and its index errors."""

from __future__ import annotations

import numpy as np
import pytest
from numba_test_helpers import node_model, run_numba, run_onnxruntime

CASES = [
    # data shape, indices shape (last = k), batch_dims
    ((2, 5), (2, 1, 1, 5, 2), 0),        # the attention-mask gather dynamo exports
    ((4, 3, 6), (5, 1), 0),
    ((4, 3, 6), (2, 2, 3), 0),
    ((3, 4, 5, 2), (3, 6, 2), 1),
    ((2, 3, 4, 5), (2, 3, 7, 1), 2),
    ((3, 2, 0), (3, 4, 1), 1),           # an empty slice per index
]


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_gather_nd_matches_onnxruntime(case: tuple, dtype: type) -> None:
    shape, ishape, batch_dims = case
    rng = np.random.default_rng(len(shape) + 10 * len(ishape) + batch_dims)
    x = rng.standard_normal(shape) > 0 if dtype is np.bool_ else (rng.standard_normal(shape) * 10).astype(dtype)
    k = ishape[-1]
    sizes = np.array(shape[batch_dims:batch_dims + k])
    idx = rng.integers(-sizes, sizes, size=ishape).astype(np.int64)  # negatives count from the end
    model = node_model("GatherND", {"x": x, "i": idx}, opset=13, batch_dims=batch_dims)
    feeds = {"x": x, "i": idx}
    got, _ = run_numba(model, feeds)
    expected = run_onnxruntime(model, feeds)
    assert got[0].dtype == expected[0].dtype and got[0].shape == expected[0].shape
    np.testing.assert_array_equal(got[0], expected[0])


def test_gather_nd_index_out_of_range_names_the_node() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[0, 1], [2, 4]], np.int64)
    model = node_model("GatherND", {"x": x, "i": idx}, opset=13)
    with pytest.raises(Exception, match=r"GatherND.*index 4 is out of bounds for axis 1 of size 4"):
        run_numba(model, {"x": x, "i": idx})
    with pytest.raises(Exception):
        run_onnxruntime(model, {"x": x, "i": idx})
