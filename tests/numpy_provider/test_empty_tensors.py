"""Ops on empty tensors (detection models' shape paths when no box survives) against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.single_node_oracle import assert_matches_oracle

F, I = np.float32, np.int64
DATA = np.arange(12, dtype=F).reshape(3, 4)

CASES = [
    # Faster R-CNN's box RoI pool: ScatterElements with no indices returns the data.
    ("ScatterElements", {"d": DATA, "i": np.zeros((0, 4), I), "u": np.zeros((0, 4), F)}, {"axis": 0}, 1),
    ("ScatterElements", {"d": DATA, "i": np.zeros((3, 0), I), "u": np.zeros((3, 0), F)}, {"axis": 1}, 1),
    ("ScatterElements", {"d": DATA, "i": np.zeros((0, 4), I), "u": np.zeros((0, 4), F)},
     {"axis": 0, "reduction": "add"}, 1),
    ("ScatterND", {"d": DATA, "i": np.zeros((0, 1), I), "u": np.zeros((0, 4), F)}, {}, 1),
    ("ScatterND", {"d": DATA, "i": np.zeros((0, 2), I), "u": np.zeros((0,), F)}, {}, 1),
    ("ScatterND", {"d": np.zeros((0, 4), F), "i": np.zeros((0, 1), I), "u": np.zeros((0, 4), F)}, {}, 1),
    ("Conv", {"x": np.zeros((0, 2, 5, 5), F), "w": np.ones((3, 2, 3, 3), F)}, {"pads": [1, 1, 1, 1]}, 1),
    ("ReduceMean", {"x": np.zeros((3, 0), F), "a": np.array([1], I)}, {}, 1),
    ("ReduceMean", {"x": np.zeros((0,), F)}, {"keepdims": 0}, 1),
    ("GatherElements", {"d": DATA, "i": np.zeros((0, 4), I)}, {"axis": 0}, 1),
    ("GatherND", {"d": DATA, "i": np.zeros((0, 2), I)}, {}, 1),
    ("GatherND", {"d": np.zeros((0, 4), F), "i": np.zeros((0, 1), I)}, {}, 1),
    ("Gather", {"d": np.zeros((0, 4), F), "i": np.zeros((2,), I)}, {"axis": 1}, 1),
    ("TopK", {"x": np.zeros((0, 5), F), "k": np.array([2], I)}, {"axis": 1}, 2),
    ("NonZero", {"x": np.zeros((0, 3), F)}, {}, 1),
    ("Expand", {"x": np.zeros((1, 1), F), "s": np.array([0, 4], I)}, {}, 1),
    ("Reshape", {"x": np.zeros((0, 4), F), "s": np.array([-1, 2], I)}, {}, 1),
    ("RoiAlign", {"x": np.ones((1, 2, 8, 8), F), "r": np.zeros((0, 4), F), "b": np.zeros((0,), I)},
     {"output_height": 2, "output_width": 2}, 1),
    ("NonMaxSuppression", {"b": np.zeros((1, 0, 4), F), "s": np.zeros((1, 1, 0), F), "m": np.array([10], I)}, {}, 1),
]


@pytest.mark.parametrize("op_type, feeds, attrs, n_outputs", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_empty_tensor(op_type, feeds, attrs, n_outputs):
    assert_matches_oracle(op_type, feeds, n_outputs=n_outputs, **attrs)
