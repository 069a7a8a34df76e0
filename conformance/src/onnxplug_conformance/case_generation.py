"""Regenerate the ONNX backend node test data from the case definitions in onnx.

onnx >= 1.23 does not ship ``onnx/backend/test/data/node``: the cases exist only as Python
``export_*`` functions that run when their module is imported. This worker writes them in the
classic layout (``<test_name>/model.onnx``, ``test_data_set_0/input_<j>.pb`` and ``output_<j>.pb``,
and ``case.json`` with the TestCase's rtol/atol), as onnx's ``cmd_tools.py generate-data`` does.
It must run in a fresh interpreter (``python -m onnxplug_conformance.case_generation``) because the
exports run only once per process, at import time; :mod:`onnxplug_conformance.backend_cases` starts
it with fixed seeds.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

if TYPE_CHECKING:
    from onnx.backend.test.case.test_case import TestCase

NODE_CASE_PACKAGE = "onnx.backend.test.case.node"
CASE_METADATA_FILE = "case.json"


class UnknownOpTypeError(ValueError):
    """Raised when no onnx node case module mentions the requested op type."""


def _case_modules_mentioning(op_type: str) -> list[str]:
    """Names of node case modules whose source mentions ``"<op_type>"``.

    Importing only these keeps a filtered generation fast (a full import runs every
    export); the onnx ``expect`` filter then drops the other op types.
    """
    package = importlib.import_module(NODE_CASE_PACKAGE)
    root = Path(package.__file__).parent
    needle = f'"{op_type}"'
    modules = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        if needle in path.read_text(encoding="utf-8"):
            relative = path.relative_to(root).with_suffix("")
            modules.append(".".join((NODE_CASE_PACKAGE, *relative.parts)))
    if not modules:
        raise UnknownOpTypeError(f"no onnx node test case mentions op type {op_type!r}")
    return modules


def collect_node_testcases(op_type: str | None = None) -> list[TestCase]:
    """Run the onnx node case exports and return their TestCases.

    ``op_type=None`` uses onnx's own ``collect_testcases()`` (every case).  With an op
    type, only the modules mentioning it are imported; each export reseeds numpy's
    global RNG (``np.random.seed(0)`` in onnx's exporter metaclass), so the data of a
    case does not depend on which other modules ran.
    """
    node_cases = importlib.import_module(NODE_CASE_PACKAGE)
    if op_type is None:
        return list(node_cases.collect_testcases())
    node_cases._TargetOpType = op_type  # the filter onnx's expect() honours
    for module_name in _case_modules_mentioning(op_type):
        importlib.import_module(module_name)
    return list(node_cases._NodeTestCases)


def serialize_value(value: Any, type_proto: onnx.TypeProto, name: str) -> bytes:
    """Serialise one input/output value the way onnx's ``generate-data`` writer does."""
    if type_proto.HasField("map_type"):
        return numpy_helper.from_dict(value, name).SerializeToString()
    if type_proto.HasField("sequence_type"):
        return numpy_helper.from_list(value, name).SerializeToString()
    if type_proto.HasField("optional_type"):
        return numpy_helper.from_optional(value, name).SerializeToString()
    if not type_proto.HasField("tensor_type"):
        raise TypeError(f"value {name!r} has an unsupported type: {type_proto}")
    if isinstance(value, TensorProto):
        return value.SerializeToString()
    return numpy_helper.from_array(np.asarray(value), name).SerializeToString()


def write_case(case: TestCase, output_root: Path) -> None:
    """Write one node TestCase (model, data sets, tolerances) under ``output_root``."""
    if case.model is None or not case.data_sets:
        raise ValueError(f"node test case {case.name!r} has no model or data")
    case_dir = output_root / case.name
    case_dir.mkdir(parents=True, exist_ok=False)
    (case_dir / "model.onnx").write_bytes(case.model.SerializeToString())
    graph = case.model.graph
    for index, (inputs, outputs) in enumerate(case.data_sets):
        data_dir = case_dir / f"test_data_set_{index}"
        data_dir.mkdir()
        for j, value in enumerate(inputs):
            info = graph.input[j]
            payload = serialize_value(value, info.type, info.name)
            (data_dir / f"input_{j}.pb").write_bytes(payload)
        for j, value in enumerate(outputs):
            info = graph.output[j]
            payload = serialize_value(value, info.type, info.name)
            (data_dir / f"output_{j}.pb").write_bytes(payload)
    metadata = {"rtol": case.rtol, "atol": case.atol}
    (case_dir / CASE_METADATA_FILE).write_text(json.dumps(metadata, sort_keys=True))


def main(argv: list[str] | None = None) -> int:
    """Command line entry: generate node cases (optionally one op type) into a folder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--op-type", default=None, help="only cases of this op type")
    args = parser.parse_args(argv)
    args.output.mkdir(parents=True, exist_ok=True)
    cases = collect_node_testcases(args.op_type)
    for case in cases:
        if case.kind != "node":
            raise ValueError(f"unexpected test case kind {case.kind!r} for {case.name!r}")
        write_case(case, args.output)
    print(json.dumps({"op_type": args.op_type, "cases": len(cases)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
