"""Running one ONNX backend node case on one provider, with CPU fallback disabled.

A case counts for provider P only when P runs every node: the session is created with
``providers=[P]`` and ``session.disable_cpu_ep_fallback=1`` (so nothing can fall back to the
default provider) and its node assignments are checked as well. A case P does not fully claim
raises :class:`NotClaimed`, which the suite reports as "not claimed", never as a pass.

Graph optimizations are off, so each node reaches the provider as written in the case rather
than folded or fused away by the optimizer.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

import onnxplug as ort
from onnxplug.errors import FallbackDisabledError

from onnxplug_conformance.comparison import compare_outputs
from onnxplug_conformance.node_case import DataSet, NodeCase
from onnxplug_conformance.random_ops import compare_random_outputs, is_random_op_case
from onnxplug_conformance.provider_spec import ProviderUnderTest

NOT_CLAIMED = "not claimed"
_REASON_LIMIT = 400


class NotClaimed(Exception):
    """The provider under test does not run every node of the case."""


def session_options(*, fallback_disabled: bool = True, optimize: bool = False) -> ort.SessionOptions:
    """Options for conformance sessions: no fallback, no graph rewriting (by default)."""
    options = ort.SessionOptions()
    if fallback_disabled:
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return options


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _REASON_LIMIT else text[:_REASON_LIMIT] + " ..."


def claimed_session(case: NodeCase, provider: ProviderUnderTest) -> ort.InferenceSession:
    """A session running every node of ``case`` on ``provider``; raises :class:`NotClaimed` otherwise."""
    try:
        session = ort.InferenceSession(str(case.model_path), session_options(), providers=[provider.spec])
    except FallbackDisabledError as e:
        raise NotClaimed(f"{NOT_CLAIMED}: {_shorten(str(e))}") from None
    others = [a for a in session.get_node_assignments() if a.provider != provider.name]
    if others:
        names = ", ".join(f"{a.op_type} on {a.provider}" for a in others)
        raise NotClaimed(f"{NOT_CLAIMED}: {len(others)} node(s) ran elsewhere: {_shorten(names)}")
    return session


def fresh_feeds(data_set: DataSet) -> dict[str, Any]:
    """Copies of a data set's inputs, so a kernel writing into its inputs cannot spoil the case."""
    def copy(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return value.copy()
        if isinstance(value, list):
            return [copy(v) for v in value]
        if isinstance(value, dict):
            return {k: copy(v) for k, v in value.items()}
        return value
    return {name: copy(value) for name, value in data_set.inputs.items()}


def check_outputs(case: NodeCase, data_set: DataSet, actual: list[Any]) -> None:
    """Compare with the expected outputs; random-op cases by shape, dtype and value range."""
    if is_random_op_case(case):
        compare_random_outputs(case, data_set, actual)
    else:
        compare_outputs(data_set.expected_outputs, actual, case.rtol, case.atol)


def run_node_case(case: NodeCase, provider: ProviderUnderTest) -> int:
    """Run every data set of ``case`` on ``provider``, compare, and return how many were compared.

    Raises :class:`NotClaimed`, ``AssertionError`` for wrong outputs, or whatever the session
    raised (an error of the provider or the runtime).
    """
    session = claimed_session(case, provider)
    for data_set in case.data_sets:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")  # overflow etc. in edge-case data is expected
            actual = session.run(None, fresh_feeds(data_set))
        check_outputs(case, data_set, actual)
    return len(case.data_sets)
