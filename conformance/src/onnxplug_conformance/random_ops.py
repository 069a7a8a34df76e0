"""Checks for node cases whose outputs are random draws.

Bernoulli, RandomNormal/Uniform(Like), Multinomial and Dropout in training mode (ratio
> 0) produce values that no two implementations agree on, even with a seed: onnx's own
expected outputs come from numpy's generator.  Such cases are checked by output
count, shape, dtype and the set of values the op can produce, never by value.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from onnxplug_conformance.comparison import widen
from onnxplug_conformance.node_case import DataSet, NodeCase

RANDOM_OP_TYPES = frozenset(
    {
        "Bernoulli",
        "RandomNormal",
        "RandomNormalLike",
        "RandomUniform",
        "RandomUniformLike",
        "Multinomial",
    }
)
_EXPANDED_MARKER = "_expanded_function_"
_DROPOUT_DEFAULT_RATIO = 0.5


@lru_cache(maxsize=4096)
def _load_graph(model_path: Path) -> onnx.GraphProto:
    return onnx.load(str(model_path)).graph


def _all_nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    """Nodes of a graph and of every subgraph (If/Loop/Scan bodies)."""
    for node in graph.node:
        yield node
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield from _all_nodes(attribute.g)
            for subgraph in attribute.graphs:
                yield from _all_nodes(subgraph)


def _input_value(name: str, graph: onnx.GraphProto, data_set: DataSet) -> Any | None:
    """Value of a node input from the feeds, an initializer or a Constant node."""
    if name in data_set.inputs:
        return data_set.inputs[name]
    for initializer in graph.initializer:
        if initializer.name == name:
            return numpy_helper.to_array(initializer)
    for node in graph.node:
        if node.op_type == "Constant" and name in node.output:
            for attribute in node.attribute:
                if attribute.name == "value":
                    return numpy_helper.to_array(attribute.t)
    return None


def _dropout_ratio(node: onnx.NodeProto, graph: onnx.GraphProto, data_set: DataSet) -> float:
    for attribute in node.attribute:  # opset < 12 keeps the ratio as an attribute
        if attribute.name == "ratio":
            return float(attribute.f)
    if len(node.input) > 1 and node.input[1]:
        ratio = _input_value(node.input[1], graph, data_set)
        if ratio is not None:
            return float(np.asarray(ratio))
    return _DROPOUT_DEFAULT_RATIO


def _is_training_dropout(node: onnx.NodeProto, graph: onnx.GraphProto, data_set: DataSet) -> bool:
    """Dropout draws a random mask only in training mode with a non-zero ratio."""
    training = False
    for attribute in node.attribute:  # opset <= 6: is_test=0 means training
        if attribute.name == "is_test":
            training = attribute.i == 0
    if len(node.input) > 2 and node.input[2]:
        mode = _input_value(node.input[2], graph, data_set)
        training = mode is not None and bool(np.asarray(mode))
    return training and _dropout_ratio(node, graph, data_set) > 0


def _random_nodes(case: NodeCase, data_set: DataSet) -> list[onnx.NodeProto]:
    graph = _load_graph(case.model_path)
    return [
        node
        for node in _all_nodes(graph)
        if node.op_type in RANDOM_OP_TYPES
        or (node.op_type == "Dropout" and _is_training_dropout(node, graph, data_set))
    ]


def is_random_op_case(case: NodeCase) -> bool:
    """True when some data set of ``case`` runs an op whose output is a random draw."""
    return any(_random_nodes(case, data_set) for data_set in case.data_sets)


def _origin_op(case: NodeCase, node: onnx.NodeProto) -> str:
    """Op the case tests: ``test_bernoulli_expanded`` tests Bernoulli, not RandomUniformLike.

    onnx names the internal edges of an expanded function
    ``<OpType>_<test name>_expanded_function_<edge>``.
    """
    for candidate in _all_nodes(_load_graph(case.model_path)):
        for output in candidate.output:
            if _EXPANDED_MARKER in output and "_test_" in output:
                return output.split("_test_", 1)[0]
    return node.op_type


def _attribute(node: onnx.NodeProto, name: str, default: float) -> float:
    for attribute in node.attribute:
        if attribute.name == name:
            return float(onnx.helper.get_attribute_value(attribute))
    return default


def _check_values(
    op_type: str, node: onnx.NodeProto, case: NodeCase, data_set: DataSet, actual: list[Any]
) -> None:
    """Assert that the outputs hold values ``op_type`` can produce."""
    first = widen(np.asarray(actual[0]))
    if first.dtype.kind == "f" and op_type != "Dropout" and not np.isfinite(first).all():
        raise AssertionError(f"{case.name}: output 0 of {op_type} holds non-finite values")
    if op_type == "Bernoulli":
        if not np.isin(first, (0, 1)).all():
            raise AssertionError(f"{case.name}: Bernoulli output holds values other than 0 and 1")
    elif op_type in ("RandomUniform", "RandomUniformLike"):
        low, high = _attribute(node, "low", 0.0), _attribute(node, "high", 1.0)
        if first.size and (first.min() < low or first.max() > high):
            raise AssertionError(f"{case.name}: {op_type} output outside [{low}, {high}]")
    elif op_type == "Multinomial":
        graph = _load_graph(case.model_path)
        classes = np.asarray(_input_value(node.input[0], graph, data_set)).shape[-1]
        if first.size and (first.min() < 0 or first.max() >= classes):
            raise AssertionError(f"{case.name}: Multinomial output outside [0, {classes})")
    elif op_type == "Dropout":
        _check_dropout(node, case, data_set, actual)


def _check_dropout(
    node: onnx.NodeProto, case: NodeCase, data_set: DataSet, actual: list[Any]
) -> None:
    """Each output element is 0 (dropped) or x / (1 - ratio) (kept), matching the mask."""
    graph = _load_graph(case.model_path)
    x = widen(np.asarray(data_set.inputs[node.input[0]])).astype(np.float64)
    ratio = _dropout_ratio(node, graph, data_set)
    y = widen(np.asarray(actual[0])).astype(np.float64)
    scaled = x / (1.0 - ratio)
    kept = np.isclose(y, scaled, rtol=case.rtol, atol=case.atol)
    dropped = y == 0
    if not (kept | dropped).all():
        raise AssertionError(f"{case.name}: Dropout output is neither 0 nor x / (1 - ratio)")
    if len(actual) > 1:
        mask = np.asarray(actual[1]).astype(bool)
        consistent = np.where(mask, kept, dropped)
        if not consistent.all():
            raise AssertionError(f"{case.name}: Dropout output disagrees with its mask")


def compare_random_outputs(case: NodeCase, data_set: DataSet, actual: list[Any]) -> None:
    """Check random-op outputs by count, shape, dtype and reachable values.

    Raises AssertionError naming the case and what is wrong.
    """
    expected = data_set.expected_outputs
    if len(actual) != len(expected):
        raise AssertionError(f"{case.name}: expected {len(expected)} outputs, got {len(actual)}")
    for index, (ref, out) in enumerate(zip(expected, actual)):
        ref, out = np.asarray(ref), np.asarray(out)
        if out.shape != ref.shape:
            raise AssertionError(
                f"{case.name}: output {index} shape {out.shape}, expected {ref.shape}"
            )
        if out.dtype != ref.dtype:
            raise AssertionError(
                f"{case.name}: output {index} dtype {out.dtype}, expected {ref.dtype}"
            )
    nodes = _random_nodes(case, data_set)
    if not nodes:
        raise ValueError(f"{case.name}: not a random-op case; use compare_outputs")
    _check_values(_origin_op(case, nodes[0]), nodes[0], case, data_set, list(actual))
