"""Every intermediate value of a run: captured, dumped to ``.npy`` files, compared between runtimes.

A capture runs the session's plan instrumented and keeps, for each top-level step, the host copy of
each value it produced, with the node that produces it in the planned graph and the provider that
ran it; asked to look inside one If/Loop/Scan step, it also keeps every value that step's bodies
produced, keyed by the enclosing steps and the iteration (the how-many-th time the body produced
it in the run). ``diff`` compares two captures value by value in the first one's execution order;
onnxruntime's side is captured by adding every node output as a graph output (its bodies are not
visible). When the first divergence comes out of a fused step (or a node the optimizer made),
``diff`` runs both sides again unoptimised with the providers' ``fuse*`` options off to name the
model's node; when it comes out of an If/Loop/Scan, it compares that node's body values.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from onnxplug.executor import RunStats, StepKind, run_plan

CONTROL_FLOW = ("If", "Loop", "Scan")


@dataclass
class Captured:
    """One intermediate value of a run."""

    name: str
    node: str
    op_type: str
    provider: str
    value: Any
    step: str = ""  #: the plan step that produced it (a fused step's name for its outputs)
    parents: tuple[str, ...] = ()  #: the If/Loop/Scan steps, outermost first, whose body produced it
    iteration: int = 0  #: the how-many-th time (from 0) its body produced it in the run
    fused: tuple[str, ...] = ()  #: the nodes of the fused step that produced it

    @property
    def key(self) -> tuple[tuple[str, ...], str, int]:
        return self.parents, self.name, self.iteration


class _Capturing(RunStats):
    """Run statistics that also keep every value a top-level step produced, on the host, and with
    ``inside``, every value the bodies of that top-level step produced."""

    def __init__(self, inside: str | None = None) -> None:
        super().__init__()
        self.inside = inside
        self.values: list[tuple[Any, str, Any, tuple[str, ...], int]] = []  # (step, name, value, parents, iteration)
        self._seen: Counter[tuple[tuple[str, ...], str]] = Counter()

    def stop(self, step: Any, t0: float, produced: tuple) -> None:
        parents = tuple(s.name for s in self._running[:-1])
        super().stop(step, t0, produced)
        if step.kind == StepKind.COPY or (parents and parents[0] != self.inside):
            return
        kept = [o for o in step.outputs if o]
        for planned, value in zip(kept, produced):
            name = getattr(planned, "name", planned)
            iteration = self._seen[parents, name]
            self._seen[parents, name] += 1
            if not isinstance(value, (np.ndarray, np.generic, list)) and step.provider is not None:
                value = step.provider.data_transfer.to_host(value)
            self.values.append((step, name, np.array(value, copy=True) if not isinstance(value, list) else value,
                                parents, iteration))


def capture(session: Any, feeds: Mapping[str, Any], inside: str | None = None) -> list[Captured]:
    """Run ``session`` (an onnxplug InferenceSession) on ``feeds``; every intermediate, in order;
    with ``inside`` (a top-level If/Loop/Scan step's name), its bodies' values too."""
    engine = session.engine
    producers = {o: n for n in engine.model.graph.nodes for o in n.outputs if o}
    groups = [*engine.groups, *(g for _, body in engine.subgraph_groups for g in body)]
    members = {g.name: tuple(n.name for n in g.nodes) for g in groups if g.fused}
    stats = _Capturing(inside)
    run_plan(engine.plan, engine.check_feeds(feeds), None, stats)
    found = []
    for step, name, value, parents, iteration in stats.values:
        node = producers.get(name) if not parents else None
        found.append(Captured(name, node.name if node is not None else step.name,
                              node.op_type if node is not None else step.op_type,
                              step.provider.name if step.provider else "", value, step.name, parents, iteration,
                              members.get(step.name, ())))
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
    step: str = ""  #: the first side's plan step that produced it
    parents: tuple[str, ...] = ()  #: for a body value: the If/Loop/Scan steps around it, outermost first
    iteration: int = 0  #: for a body value: the how-many-th time its body produced it
    fused: tuple[str, ...] = ()  #: the nodes of the fused step that produced it, if fused
    #: the first divergence with fusion off (unoptimised, the providers' fuse* options false), when
    #: ``fused`` or the node is not the model's; None when that run agrees (see ``unfused_checked``)
    unfused: Divergence | None = None
    unfused_checked: bool = False
    #: for an If/Loop/Scan: the first divergence among its bodies' values, None when they agree
    inside: Divergence | None = None


def compare(first: list[Captured], second: Mapping[Any, tuple[str, Any]], inputs_of: Mapping[str, list[str]],
            shapes: Mapping[str, Any], rtol: float, atol: float) -> tuple[Divergence | None, int]:
    """The first of ``first`` (in its order) that ``second`` holds and that differs beyond
    ``atol + rtol * |second|``, and how many values were compared. ``second`` maps a value's
    ``Captured.key`` (or, for a top-level value, its name) to (provider, value)."""
    compared = 0
    for item in first:
        other_side = second.get(item.key) or (second.get(item.name) if not item.parents else None)
        if other_side is None or not isinstance(item.value, np.ndarray):
            continue
        provider, other = other_side
        other = np.asarray(other)
        compared += 1
        where = {"step": item.step, "parents": item.parents, "iteration": item.iteration, "fused": item.fused}
        ins = _shapes(inputs_of.get(item.name, []), shapes) if not item.parents else []
        if item.value.shape != other.shape:
            return Divergence(item.name, item.node, item.op_type, (item.provider, provider), float("inf"),
                              float("inf"), ins, **where), compared
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
                              float(np.nanmax(diff)), float(np.nanmax(rel)), ins, **where), compared
    return None, compared


def _shapes(names: list[str], shapes: Mapping[str, Any]) -> list[list[int] | None]:
    return [list(np.shape(shapes[n])) if n in shapes else None for n in names]


def _unfused_options(provider: str) -> dict[str, Any]:
    """The provider's boolean ``fuse*`` options (numba's fuse_elementwise, opencl's fuse), all off."""
    from onnxplug.plugins import get_catalog

    cls = get_catalog().providers.get(provider)
    defaults = getattr(cls, "default_options", None) or {}
    return {k: False for k, v in defaults.items() if k.startswith("fuse") and isinstance(v, bool)}


def _model_nodes(model_path: str) -> set[str]:
    """The names of the model's own nodes, bodies included."""
    import onnx

    names: set[str] = set()

    def walk(graph: Any) -> None:
        for node in graph.node:
            names.add(node.name)
            for attr in node.attribute:
                for g in [attr.g] if attr.HasField("g") else list(attr.graphs):
                    walk(g)

    walk(onnx.load(model_path).graph)
    return names


def _diff_once(model_path: str, sides: tuple[str, str], feeds: Mapping[str, Any], rtol: float, atol: float,
               level: int, fuse: bool, inside: str | None) -> tuple[Divergence | None, int]:
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
        provider_options = None if fuse else [_unfused_options(side)]
        sess = ort.InferenceSession(model_path, options, providers=[side], provider_options=provider_options)
        graph = graph or sess.engine.model.graph
        captures.append(capture(sess, feeds, inside))
    if isinstance(captures[0], dict):  # keep an onnxplug side first: it gives the order and the nodes
        captures.reverse()
        sides = (sides[1], sides[0])
    first, second = captures
    assert isinstance(first, list), "at least one side must be an onnxplug provider"
    if isinstance(second, dict):
        other: dict[Any, tuple[str, Any]] = {((), name, 0): ("onnxruntime", value) for name, value in second.items()}
    else:
        other = {c.key: (c.provider, c.value) for c in second}
    inputs_of = {o: [i for i in n.inputs if i] for n in graph.nodes for o in n.outputs if o}
    shapes = {**dict(feeds), **graph.initializers, **{c.name: c.value for c in first if not c.parents}}
    return compare(first, other, inputs_of, shapes, rtol, atol)


def diff(model_path: str, sides: tuple[str, str], feeds: Mapping[str, Any], *, rtol: float = 1e-3,
         atol: float = 1e-4, level: int = 0) -> tuple[Divergence | None, int]:
    """Run the model on each side (a provider, or ``"onnxruntime"``) and compare every intermediate
    both have (graph optimisation ``level``, none by default, so both keep the model's values).

    A divergence out of a fused step, or out of a node the optimizer made, is looked for again with
    fusion off (``Divergence.unfused``); one out of an If/Loop/Scan, among its bodies' values
    (``Divergence.inside``; both sides must be onnxplug providers).
    """
    found, compared = _diff_once(model_path, sides, feeds, rtol, atol, level, True, None)
    if found is None:
        return None, compared
    target, fuse, at = found, True, level
    if found.fused or found.node not in _model_nodes(model_path):
        found.unfused, _ = _diff_once(model_path, sides, feeds, rtol, atol, 0, False, None)
        found.unfused_checked = True
        target, fuse, at = found.unfused, False, 0
    if target is not None and target.op_type in CONTROL_FLOW and "onnxruntime" not in sides:
        body, _ = _diff_once(model_path, sides, feeds, rtol, atol, at, fuse, target.step)
        target.inside = body if body is not None and body.parents else None
    return found, compared


def describe(found: Divergence) -> list[str]:
    """``onnxplug diff``'s report of a divergence, one line each."""
    lines = [f"first divergence: value {found.value!r} of node {found.node!r} ({found.op_type})",
             f"  providers: {found.providers[0]} vs {found.providers[1]}",
             f"  max abs error {found.max_abs:.6g}, max rel error {found.max_rel:.6g}",
             f"  input shapes: {found.input_shapes}"]
    if found.fused:
        lines.append(f"  produced by fused step {found.step!r} of nodes {', '.join(map(repr, found.fused))}")
    target = found
    if found.unfused_checked:
        if found.unfused is None:
            lines.append("  with fusion off (unoptimised, fuse* options false) the sides agree: "
                         "the fused or optimised kernel alone diverges")
        else:
            target = found.unfused
            lines.append(f"  with fusion off: value {target.value!r} of node {target.node!r} ({target.op_type}), "
                         f"max abs error {target.max_abs:.6g}")
    if target.inside is not None:
        b = target.inside
        where = " > ".join(map(repr, b.parents))
        lines.append(f"  inside {where}: iteration {b.iteration}, value {b.value!r} of body node {b.node!r} "
                     f"({b.op_type}), max abs error {b.max_abs:.6g}, max rel error {b.max_rel:.6g}")
    elif target.op_type in CONTROL_FLOW:
        lines.append("  its bodies' values were not compared: onnxruntime's are not visible"
                     if "onnxruntime" in target.providers else "  its bodies' values agree")
    return lines
