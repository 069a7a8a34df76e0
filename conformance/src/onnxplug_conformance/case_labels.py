"""Which ONNX op a backend node test is about, for per-op counts.

A node case's model holds one top-level node of the op under test (its subgraphs may hold
more), except the ``*_expanded*`` cases, which inline the op's function body. onnx names the
edges of an inlined body ``<OpType>_<test name>_expanded_function_<edge>``, so the op is
read back from those names, and its domain from the onnx schemas.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import onnx

from onnxplug_conformance.node_case import NodeCase

_EXPANDED_MARKER = "_expanded_function_"
#: Domains searched for an expanded op's schema, default domain first.
_SCHEMA_DOMAINS = ("", "ai.onnx.ml", "ai.onnx.preview", "ai.onnx.preview.training")


def op_label(domain: str, op_type: str) -> str:
    """``Abs`` for the default domain, ``ai.onnx.ml::TreeEnsemble`` for others."""
    domain = "" if domain == "ai.onnx" else domain
    return f"{domain}::{op_type}" if domain else op_type


def _schema_domain(op_type: str) -> str:
    for domain in _SCHEMA_DOMAINS:
        if onnx.defs.has(op_type, domain):
            return domain
    return ""


@lru_cache(maxsize=4096)
def _label_of_model(model_path: Path) -> str:
    graph = onnx.load(str(model_path), load_external_data=False).graph
    for node in graph.node:
        for output in node.output:
            if _EXPANDED_MARKER in output and "_test_" in output:
                op_type = output.split("_test_", 1)[0]
                return op_label(_schema_domain(op_type), op_type)
    if not graph.node:
        return "<no node>"
    kinds = {(node.domain, node.op_type) for node in graph.node}
    if len(kinds) > 1:  # not seen in onnx 1.23; the first node is the best guess
        first = graph.node[0]
        return op_label(first.domain, first.op_type)
    domain, op_type = kinds.pop()
    return op_label(domain, op_type)


def case_op(case: NodeCase) -> str:
    """The op a node case tests, e.g. ``LayerNormalization`` for
    ``test_layer_normalization_2d_axis0_expanded``."""
    return _label_of_model(case.model_path)
