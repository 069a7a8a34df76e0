"""In-memory form of one generated ONNX backend node test case, and its loader."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
from onnx import numpy_helper

from onnxplug_conformance.case_generation import CASE_METADATA_FILE

# Defaults of onnx's backend runner / node ``expect()`` when a case gives none.
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-7


class CaseDataError(ValueError):
    """Raised when a generated case folder is missing files or holds unreadable data."""


@dataclass(frozen=True)
class DataSet:
    """One ``test_data_set_<i>``: feeds keyed by graph input name, expected outputs by name.

    Values are numpy arrays for tensors, lists for sequences, dicts for maps and
    ``None`` for empty optionals, exactly as ``onnx.numpy_helper`` returns them.
    """

    inputs: dict[str, Any]
    outputs: dict[str, Any]

    @property
    def expected_outputs(self) -> list[Any]:
        """Expected outputs in graph output order (what ``compare_outputs`` takes)."""
        return list(self.outputs.values())


@dataclass(frozen=True)
class NodeCase:
    """One ONNX backend node test, e.g. ``test_abs``, loaded from the case cache."""

    name: str
    model_path: Path
    data_sets: tuple[DataSet, ...]
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL

    def load_model(self) -> onnx.ModelProto:
        """Parse ``model.onnx`` (not kept on the case to keep loading cheap)."""
        return onnx.load(str(self.model_path))


def parse_value(payload: bytes, type_proto: onnx.TypeProto, where: Path) -> Any:
    """Decode one ``.pb`` file according to the graph type it feeds or comes from."""
    if type_proto.HasField("sequence_type"):
        sequence = onnx.SequenceProto()
        sequence.ParseFromString(payload)
        return numpy_helper.to_list(sequence)
    if type_proto.HasField("optional_type"):
        optional = onnx.OptionalProto()
        optional.ParseFromString(payload)
        return numpy_helper.to_optional(optional)
    if type_proto.HasField("map_type"):
        map_proto = onnx.MapProto()
        map_proto.ParseFromString(payload)
        return numpy_helper.to_dict(map_proto)
    if type_proto.HasField("tensor_type"):
        tensor = onnx.TensorProto()
        tensor.ParseFromString(payload)
        return numpy_helper.to_array(tensor)
    raise CaseDataError(f"{where}: unsupported graph value type {type_proto}")


def _load_values(
    data_dir: Path, prefix: str, infos: list[onnx.ValueInfoProto]
) -> dict[str, Any]:
    files = sorted(data_dir.glob(f"{prefix}_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
    if len(files) > len(infos):
        raise CaseDataError(f"{data_dir}: {len(files)} {prefix} files, graph has {len(infos)}")
    values = {}
    for index, path in enumerate(files):
        if path.name != f"{prefix}_{index}.pb":
            raise CaseDataError(f"{data_dir}: expected {prefix}_{index}.pb, found {path.name}")
        values[infos[index].name] = parse_value(path.read_bytes(), infos[index].type, path)
    return values


def load_node_case(case_dir: Path) -> NodeCase:
    """Load a case folder written by :func:`case_generation.write_case`."""
    model_path = case_dir / "model.onnx"
    if not model_path.is_file():
        raise CaseDataError(f"{case_dir}: no model.onnx")
    # Only the graph's value infos are needed; they are small next to the data.
    graph = onnx.load(str(model_path), load_external_data=False).graph
    inputs = list(graph.input)
    outputs = list(graph.output)
    data_dirs = sorted(case_dir.glob("test_data_set_*"), key=lambda p: int(p.name.rsplit("_", 1)[1]))
    if not data_dirs:
        raise CaseDataError(f"{case_dir}: no test_data_set_* folder")
    data_sets = tuple(
        DataSet(
            inputs=_load_values(data_dir, "input", inputs),
            outputs=_load_values(data_dir, "output", outputs),
        )
        for data_dir in data_dirs
    )
    rtol, atol = DEFAULT_RTOL, DEFAULT_ATOL
    metadata_path = case_dir / CASE_METADATA_FILE
    if metadata_path.is_file():
        metadata = json.loads(metadata_path.read_text())
        rtol = float(metadata.get("rtol", rtol))
        atol = float(metadata.get("atol", atol))
    return NodeCase(case_dir.name, model_path, data_sets, rtol, atol)
