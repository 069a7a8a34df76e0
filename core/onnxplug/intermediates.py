"""Every intermediate value of a run: captured, dumped to ``.npy`` files, compared between runtimes.

A capture runs the session's plan instrumented and keeps, for each top-level step, the host copy of
each value it produced, with the node that produces it in the planned graph and the provider that
ran it. Values inside a fused subgraph or an If/Loop/Scan body are not visible, only what crosses
their boundary. ``diff`` compares two captures value by value in the first one's execution order;
onnxruntime's side is captured by adding every node output as a graph output.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from onnxplug.executor import RunStats, StepKind, run_plan


@dataclass
class Captured:
    """One intermediate value of a run."""

    name: str
    node: str
    op_type: str
    provider: str
    value: Any


class _Capturing(RunStats):
    """Run statistics that also keep every value a top-level step produced, on the host."""

    def __init__(self) -> None:
        super().__init__()
        self.values: list[tuple[Any, str, Any]] = []  # (step, planned value, value)

    def stop(self, step: Any, t0: float, produced: tuple) -> None:
        top = len(self._running) == 1
        super().stop(step, t0, produced)
        if top and step.kind != StepKind.COPY:
            kept = [o for o in step.outputs if o]
            for planned, value in zip(kept, produced):
                if not isinstance(value, (np.ndarray, np.generic, list)) and step.provider is not None:
                    value = step.provider.data_transfer.to_host(value)
                self.values.append((step, planned, np.array(value, copy=True) if not isinstance(value, list)
                                    else value))


def capture(session: Any, feeds: Mapping[str, Any]) -> list[Captured]:
    """Run ``session`` (an onnxplug InferenceSession) on ``feeds``; every intermediate, in order."""
    engine = session.engine
    producers = {o: n for n in engine.model.graph.nodes for o in n.outputs if o}
    stats = _Capturing()
    run_plan(engine.plan, engine.check_feeds(feeds), None, stats)
    found = []
    for step, planned, value in stats.values:
        name = getattr(planned, "name", planned)
        node = producers.get(name)
        found.append(Captured(name, node.name if node is not None else step.name,
                              node.op_type if node is not None else step.op_type,
                              step.provider.name if step.provider else "", value))
    return found


def capture_onnxruntime(model_path: str, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """onnxruntime's value of every node output of the main graph (added as graph outputs)."""
    import onnx
    import onnxruntime

    model = onnx.load(model_path)
    known = {o.name for o in model.graph.output}
    for node in model.graph.node:
        for out in node.output:
            if out and out not in known:
                model.graph.output.append(onnx.ValueInfoProto(name=out))
                known.add(out)
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, dict(feeds))))


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "value"


def dump(session: Any, feeds: Mapping[str, Any], directory: str) -> str:
    """Write every intermediate of one run to ``directory`` as ``.npy`` files with ``manifest.json``
    (value, file, node, op, provider, shape, dtype per entry); return the manifest's path."""
    os.makedirs(directory, exist_ok=True)
    entries = []
    for i, item in enumerate(capture(session, feeds)):
        if not isinstance(item.value, np.ndarray):
            continue  # sequences and maps have no .npy form
        file = f"{i:04d}_{_safe(item.name)}.npy"
        np.save(os.path.join(directory, file), item.value, allow_pickle=False)
        entries.append({"value": item.name, "file": file, "node": item.node, "op": item.op_type,
                        "provider": item.provider, "shape": list(item.value.shape), "dtype": str(item.value.dtype)})
    path = os.path.join(directory, "manifest.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(entries, f, indent=1)
    return path


@dataclass
class Divergence:
    """The first value whose two runs disagree beyond tolerance."""

    value: str
    node: str
    op_type: str
    providers: tuple[str, str]
    max_abs: float
    max_rel: float
    input_shapes: list[list[int] | None]


def compare(first: list[Captured], second: Mapping[str, tuple[str, Any]], inputs_of: Mapping[str, list[str]],
            shapes: Mapping[str, Any], rtol: float, atol: float) -> tuple[Divergence | None, int]:
    """The first of ``first`` (in its order) that ``second`` (value -> (provider, value)) holds and
    that differs beyond ``atol + rtol * |second|``, and how many values were compared."""
    compared = 0
    for item in first:
        if item.name not in second or not isinstance(item.value, np.ndarray):
            continue
        provider, other = second[item.name]
        other = np.asarray(other)
        compared += 1
        if item.value.shape != other.shape:
            return Divergence(item.name, item.node, item.op_type, (item.provider, provider), float("inf"),
                              float("inf"), _shapes(inputs_of.get(item.name, []), shapes)), compared
        if item.value.dtype.kind in "fc" or other.dtype.kind in "fc":
            a, b = item.value.astype(np.float64), other.astype(np.float64)
            same = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
            diff = np.where(np.isnan(a) & np.isnan(b), 0.0, np.abs(a - b))
        else:
            same = item.value == other
            diff = np.abs(item.value.astype(np.float64) - other.astype(np.float64))
            b = other.astype(np.float64)
        if not np.all(same):
            rel = diff / np.maximum(np.abs(b), np.finfo(np.float64).tiny)
            return Divergence(item.name, item.node, item.op_type, (item.provider, provider),
                              float(np.nanmax(diff)), float(np.nanmax(rel)),
                              _shapes(inputs_of.get(item.name, []), shapes)), compared
    return None, compared


def _shapes(names: list[str], shapes: Mapping[str, Any]) -> list[list[int] | None]:
    return [list(np.shape(shapes[n])) if n in shapes else None for n in names]


def diff(model_path: str, sides: tuple[str, str], feeds: Mapping[str, Any], *, rtol: float = 1e-3,
         atol: float = 1e-4, level: int = 0) -> tuple[Divergence | None, int]:
    """Run the model on each side (a provider, or ``"onnxruntime"``) and compare every intermediate
    both have (graph optimisation ``level``, none by default, so both keep the model's values)."""
    import onnxplug as ort

    captures: list[list[Captured] | dict[str, np.ndarray]] = []
    graph = None
    for side in sides:
        if side == "onnxruntime":
            captures.append(capture_onnxruntime(model_path, feeds))
            continue
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        options.log_severity_level = 3
        sess = ort.InferenceSession(model_path, options, providers=[side])
        graph = graph or sess.engine.model.graph
        captures.append(capture(sess, feeds))
    if isinstance(captures[0], dict):  # keep an onnxplug side first: it gives the order and the nodes
        captures.reverse()
        sides = (sides[1], sides[0])
    first, second = captures
    assert isinstance(first, list), "at least one side must be an onnxplug provider"
    if isinstance(second, dict):
        other = {name: ("onnxruntime", value) for name, value in second.items()}
    else:
        other = {c.name: (c.provider, c.value) for c in second}
    inputs_of = {o: [i for i in n.inputs if i] for n in graph.nodes for o in n.outputs if o}
    shapes = {**dict(feeds), **graph.initializers, **{c.name: c.value for c in first}}
    return compare(first, other, inputs_of, shapes, rtol, atol)
