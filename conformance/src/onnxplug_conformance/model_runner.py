"""Layer 3: the project's model suite on one provider, compared with onnxruntime.

Sessions use ``providers=[P]`` with fallback allowed (as a user would), so nodes P does not
claim run on the default provider; a model of which P runs no node is "not claimed". Outputs
must have onnxruntime's dtypes and shapes and agree within ``rtol=1e-3`` and ``atol=1e-4``
scaled by the output's largest magnitude (at least 1).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping, Sequence

import numpy as np
import onnx

import onnxplug as ort
from onnxplug.testing.model_suite import MODEL_NAMES, build, sample_inputs

from onnxplug_conformance.node_runner import NOT_CLAIMED, NotClaimed
from onnxplug_conformance.provider_spec import ProviderUnderTest

RTOL = 1e-3
ATOL = 1e-4
BATCH = 2
ONNXRUNTIME_MISSING = ("layer 3 compares with onnxruntime, which is not installed "
                       "(pip install 'onnxplug-conformance[models]')")

__all__ = ["MODEL_NAMES", "ModelRun", "assert_close_scaled", "onnxruntime_outputs", "run_model", "suite_model"]


@lru_cache(maxsize=None)
def suite_model(name: str) -> onnx.ModelProto:
    """Model ``name`` of the suite (seed 0), built once per process (ResNet-18 takes seconds).
    Shared: callers must not change it (sessions copy it)."""
    return build(name)


def onnxruntime_outputs(model: Any, feeds: Mapping[str, np.ndarray]) -> list[Any]:
    """The outputs onnxruntime's CPU provider computes (the oracle; 2 threads)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 2
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    return session.run(None, dict(feeds))


def assert_close_scaled(actual: Sequence[Any], expected: Sequence[Any], rtol: float = RTOL,
                        atol: float = ATOL) -> None:
    """Same count, dtypes and shapes; values within ``rtol`` and ``atol * max(1, max|expected|)``."""
    if len(actual) != len(expected):
        raise AssertionError(f"expected {len(expected)} outputs, got {len(actual)}")
    for index, (got, want) in enumerate(zip(actual, expected)):
        got, want = np.asarray(got), np.asarray(want)
        if got.dtype != want.dtype:
            raise AssertionError(f"output {index}: dtype {got.dtype}, onnxruntime gives {want.dtype}")
        if got.shape != want.shape:
            raise AssertionError(f"output {index}: shape {got.shape}, onnxruntime gives {want.shape}")
        scale = float(np.max(np.abs(want))) if want.size and want.dtype.kind == "f" else 1.0
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * max(scale, 1.0),
                                   err_msg=f"output {index}")


@dataclass
class ModelRun:
    """One suite model run on the provider under test, next to onnxruntime's outputs on the same feeds."""

    outputs: list[Any]
    expected: list[Any]
    assigned: dict[str, int]  # nodes run per provider


def run_model(name: str, provider: ProviderUnderTest) -> ModelRun:
    """Run model ``name`` on ``provider`` and on onnxruntime; compare with :func:`assert_close_scaled`.

    Raises :class:`NotClaimed` when the provider ran none of the model's nodes.
    """
    model = suite_model(name)
    feeds = sample_inputs(name, batch=BATCH)
    session = ort.InferenceSession(model, providers=[provider.spec])
    assigned = Counter(a.provider for a in session.get_node_assignments())
    if not assigned.get(provider.name):
        raise NotClaimed(f"{NOT_CLAIMED}: provider {provider.name!r} runs none of the "
                         f"{sum(assigned.values())} nodes of {name}")
    with np.errstate(all="ignore"):
        actual = session.run(None, {k: v.copy() for k, v in feeds.items()})
    return ModelRun(actual, onnxruntime_outputs(model, feeds), dict(assigned))
