"""What a provider claims across many graphs, and whether those claims are consistent.

The survey offers the provider every ONNX backend node case graph and every model of the project's
suite, as the partitioner would (a :class:`GraphView` of the unclaimed nodes), and checks each
answer of ``get_capability``: every claim holds nodes, all offered, none claimed twice; a
single-node claim resolves to a kernel (``Kernel.supports`` is not asked again, since a provider may
give it context that only exists inside its own ``get_capability``); a fused claim comes from a
provider that implements ``compile``. It also records the element types the claimed nodes read and
write, whose round trips the data-transfer tests check. Results are cached per provider class and
options, since several contract tests share them.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterable

from onnxplug.errors import OnnxplugError
from onnxplug.ir import Graph, Model, load_model
from onnxplug.provider import Capability, ExecutionProvider, GraphView

from onnxplug_conformance.backend_cases import NodeCase, load_cases
from onnxplug_conformance.contract.dtypes import dtype_key
from onnxplug_conformance.model_runner import suite_model
from onnxplug_conformance.random_ops import is_random_op_case

_lock = threading.Lock()
_surveys: dict[tuple[type, str], ClaimSurvey] = {}


@dataclass
class ClaimSurvey:
    """What one provider claimed over the surveyed graphs."""

    graphs: int = 0
    claimed_nodes: int = 0
    dtypes: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    #: Node cases whose every node the provider claims, without random outputs.
    deterministic_cases: list[str] = field(default_factory=list)
    #: Model-suite name -> names of the nodes the provider claims.
    model_claims: dict[str, set[str]] = field(default_factory=dict)


@lru_cache(maxsize=1)
def node_cases() -> dict[str, NodeCase]:
    """Every cached ONNX backend node case by name (the cache is generated on first use)."""
    return {case.name: case for case in load_cases()}


def _overrides_compile(provider: ExecutionProvider) -> bool:
    return type(provider).compile is not ExecutionProvider.compile


def check_claims(provider: ExecutionProvider, view: GraphView, claims: Iterable[Capability],
                 where: str) -> tuple[list[str], list[Any]]:
    """Problems with one ``get_capability`` answer, and the nodes it claimed."""
    problems: list[str] = []
    offered = {id(n) for n in view.nodes}
    seen: set[int] = set()
    claimed = []
    for cap in claims:
        if not isinstance(cap, Capability):
            problems.append(f"{where}: get_capability returned {type(cap).__name__}, not a Capability")
            continue
        if not cap.nodes:
            problems.append(f"{where}: a claim with no nodes")
        for node in cap.nodes:
            if id(node) not in offered:
                problems.append(f"{where}: claimed {node.describe()}, which was not offered")
            elif id(node) in seen:
                problems.append(f"{where}: claimed {node.describe()} twice")
            seen.add(id(node))
            claimed.append(node)
        if cap.fused:
            if not _overrides_compile(provider):
                problems.append(f"{where}: fused claim {cap.name!r} but the provider does not implement compile")
        elif len(cap.nodes) > 1:
            problems.append(f"{where}: a claim of {len(cap.nodes)} nodes that is not marked fused")
        elif cap.nodes:
            node = cap.nodes[0]
            if provider.resolve_kernel(node) is None:
                problems.append(f"{where}: claimed {node.describe()} but resolve_kernel finds no kernel")
    return problems, claimed


def _claim_graph(provider: ExecutionProvider, graph: Graph, survey: ClaimSurvey, where: str) -> list[Any]:
    view = GraphView(graph, graph.nodes)
    try:
        claims = provider.get_capability(view)
    except Exception as e:  # noqa: BLE001 - any exception is a contract problem worth listing
        survey.problems.append(f"{where}: get_capability raised {type(e).__name__}: {e}")
        return []
    problems, claimed = check_claims(provider, view, claims, where)
    survey.problems.extend(problems)
    survey.graphs += 1
    survey.claimed_nodes += len(claimed)
    for node in claimed:
        for name in [*node.inputs, *node.outputs]:
            dtype = view.dtype_of(name) if name else None
            if dtype is not None:
                survey.dtypes.add(dtype_key(dtype))
    return claimed


def _load(source: Any) -> Model | None:
    try:
        return load_model(source)
    except OnnxplugError:  # a model the runtime refuses is no question for the provider
        return None


@lru_cache(maxsize=1)
def surveyed_graphs() -> list[tuple[str, str, Graph]]:
    """(kind, name, graph) of every loadable node case and suite model, loaded once per process.

    Providers only read them (a ``GraphView`` is read-only), so surveys of several providers
    share them.
    """
    from onnxplug.testing.model_suite import MODEL_NAMES

    found = []
    for name, case in node_cases().items():
        model = _load(str(case.model_path))
        if model is not None:
            found.append(("node case", name, model.graph))
    for name in MODEL_NAMES:
        model = _load(suite_model(name))
        if model is not None:
            found.append(("model", name, model.graph))
    return found


def _survey(provider: ExecutionProvider) -> ClaimSurvey:
    survey = ClaimSurvey()
    cases = node_cases()
    for kind, name, graph in surveyed_graphs():
        claimed = _claim_graph(provider, graph, survey, f"{kind} {name}")
        if kind == "model":
            survey.model_claims[name] = {n.name for n in claimed}
        elif len(claimed) == len(graph.nodes) and not is_random_op_case(cases[name]):
            survey.deterministic_cases.append(name)
    return survey


def survey_claims(provider_class: type[ExecutionProvider], options: dict[str, Any]) -> ClaimSurvey:
    """The (cached) survey of ``provider_class`` with ``options``."""
    key = (provider_class, json.dumps(options, sort_keys=True, default=repr))
    with _lock:
        if key not in _surveys:
            _surveys[key] = _survey(provider_class(dict(options)))
        return _surveys[key]
