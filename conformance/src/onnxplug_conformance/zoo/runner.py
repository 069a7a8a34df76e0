"""Running one built zoo model on one provider and comparing it with the oracle.

The session is made as a user would: ``providers=[P]`` (nodes P does not claim fall back to the
default provider), 2 intra-op threads. It runs the seeded feeds of both shape sets; the oracle is
onnxruntime's CPU provider with 2 threads, or ``onnx.reference.ReferenceEvaluator`` for a model
whose ``oracle`` is ``"reference"``. The result records whether every output of both shape sets
matched (:mod:`.compare`), the fraction of nodes P ran (``get_node_assignments()``), the first
error as ``Type: first line`` and the seconds the provider's session took to make and run.
An error of the oracle itself is reported as such (``oracle ...``), never as a mismatch.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from onnxplug_conformance.zoo.compare import compare_outputs
from onnxplug_conformance.zoo.inputs import feeds as model_feeds
from onnxplug_conformance.zoo.spec import ZooModel

THREADS = 2
SHAPE_SETS = (0, 1)


@dataclass
class ZooResult:
    """One model on one provider."""

    name: str
    provider: str
    match: bool = False
    claimed: float | None = None  # fraction of the session's nodes the provider runs
    nodes: int = 0
    assignments: dict[str, int] = field(default_factory=dict)  # nodes per provider
    error: str = ""  # "Type: first line" of the first exception, "" when none
    oracle_error: bool = False  # the error is the oracle's, not the provider's
    problems: list[str] = field(default_factory=list)  # mismatches, "shape set N: ..."
    time_s: float = 0.0
    oracle: str = "onnxruntime"

    def to_json(self) -> dict[str, Any]:
        """The JSON form saved in ``results/<provider>.json``."""
        return asdict(self)

    @property
    def summary(self) -> str:
        """One line: the error, or the first mismatch, or ``match``."""
        if self.error:
            return self.error
        if self.problems:
            more = f" (+{len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            return self.problems[0] + more
        return "match" if self.match else "no result"


def error_line(error: BaseException) -> str:
    """``Type: first line of the message``."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def oracle_outputs(model: ZooModel, path: Path, feeds: Mapping[str, np.ndarray]) -> list[Any]:
    """The oracle's outputs: onnxruntime CPU (2 threads), or onnx's reference evaluator."""
    if model.oracle == "reference":
        from onnx.reference import ReferenceEvaluator

        return list(ReferenceEvaluator(str(path)).run(None, dict(feeds)))
    if model.oracle != "onnxruntime":
        raise ValueError(f"zoo model {model.name!r}: unknown oracle {model.oracle!r}")
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = THREADS
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, dict(feeds))


def _copy(feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: v.copy() for k, v in feeds.items()}


def run_zoo_model(model: ZooModel, path: Path, provider: str, options: Mapping[str, Any] | None = None) -> ZooResult:
    """Run ``model`` (built at ``path``) on ``provider`` at both shape sets and compare with the oracle."""
    import onnxplug as ort

    result = ZooResult(model.name, provider, oracle=model.oracle)
    all_feeds = [model_feeds(model, s) for s in SHAPE_SETS]
    expected: list[list[Any]] = []
    try:
        for feeds in all_feeds:
            expected.append(oracle_outputs(model, path, _copy(feeds)))
    except Exception as e:  # noqa: BLE001 - the zoo's problem, reported as such
        result.error, result.oracle_error = f"oracle {model.oracle}: {error_line(e)}", True
        return result
    started = time.perf_counter()
    try:
        session_options = ort.SessionOptions()
        session_options.intra_op_num_threads = THREADS
        session_options.log_severity_level = 3
        session = ort.InferenceSession(str(path), session_options, providers=[(provider, dict(options or {}))])
        assigned = Counter(a.provider for a in session.get_node_assignments())
        result.assignments = dict(sorted(assigned.items()))
        result.nodes = sum(assigned.values())
        result.claimed = assigned.get(provider, 0) / result.nodes if result.nodes else None
        names = [o.name for o in session.get_outputs()]
        for shape_set, feeds, want in zip(SHAPE_SETS, all_feeds, expected):
            with np.errstate(all="ignore"):
                got = session.run(None, _copy(feeds))
            result.problems += [f"shape set {shape_set}: {p}" for p in
                                compare_outputs(got, want, names, quantized=model.quantized)]
    except Exception as e:  # noqa: BLE001 - any failure of the runtime is a result
        result.error = error_line(e)
    result.time_s = round(time.perf_counter() - started, 3)
    result.match = not result.error and not result.problems
    return result
