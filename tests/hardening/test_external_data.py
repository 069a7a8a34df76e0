"""External data that points outside the model's folder or past its file is refused before any read."""

from __future__ import annotations

import os

import numpy as np
import onnx
import onnxplug as ort
import pytest
from onnx import TensorProto, helper
from onnxplug.errors import ExternalDataError


def _write(folder, location: str, offset=None, length=None, data_file: bytes | None = b"\0" * 16):
    """A model y = x + w whose w (4 floats) lives in external file ``location``."""
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    w.data_location = TensorProto.EXTERNAL
    entries = {"location": location}
    if offset is not None:
        entries["offset"] = str(offset)
    if length is not None:
        entries["length"] = str(length)
    for k, v in entries.items():
        e = w.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    if data_file is not None:
        (folder / "w.bin").write_bytes(data_file)
    path = folder / "m.onnx"
    path.write_bytes(m.SerializeToString())
    return path


def test_valid_external_data_loads(tmp_path):
    raw = np.arange(4, dtype=np.float32).tobytes()
    path = _write(tmp_path, "w.bin", offset=0, length=16, data_file=raw)
    out = ort.InferenceSession(str(path)).run(None, {"x": np.ones(4, np.float32)})
    np.testing.assert_array_equal(out[0], [1, 2, 3, 4])


@pytest.mark.parametrize("location", ["../w.bin", "sub/../../w.bin", "/etc/passwd", "/dev/zero", ""])
def test_paths_out_of_the_folder_are_refused(tmp_path, location):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "sub").mkdir()
    path = _write(model_dir, location)
    with pytest.raises(ExternalDataError, match="'w'"):
        ort.InferenceSession(str(path))


def test_symlink_out_of_the_folder_is_refused(tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (tmp_path / "secret.bin").write_bytes(b"\1" * 16)
    os.symlink(tmp_path / "secret.bin", model_dir / "link.bin")
    path = _write(model_dir, "link.bin")
    with pytest.raises(ExternalDataError, match="escapes the model's folder"):
        ort.InferenceSession(str(path))


def test_symlink_to_a_device_file_is_refused(tmp_path):
    os.symlink("/dev/zero", tmp_path / "dev.bin")
    path = _write(tmp_path, "dev.bin")
    with pytest.raises(ExternalDataError, match="'w'"):
        ort.InferenceSession(str(path))


def test_folder_as_data_file_is_refused(tmp_path):
    (tmp_path / "d").mkdir()
    path = _write(tmp_path, "d")
    with pytest.raises(ExternalDataError, match="does not exist"):
        ort.InferenceSession(str(path))


@pytest.mark.parametrize("offset,length", [(17, None), (0, 17), (8, 16), (2**63, 16), (0, 2**63),
                                           (2**64, None), (2**63 - 1, 2**63 - 1)])
def test_extent_past_the_end_of_the_file_is_refused(tmp_path, offset, length):
    path = _write(tmp_path, "w.bin", offset=offset, length=length)
    with pytest.raises(ExternalDataError, match="past the end of 'w.bin' \\(16 bytes\\)"):
        ort.InferenceSession(str(path))


@pytest.mark.parametrize("offset,length", [(-1, None), (0, -16), ("ten", None), (0, "1e3")])
def test_offset_or_length_not_a_non_negative_integer_is_refused(tmp_path, offset, length):
    path = _write(tmp_path, "w.bin", offset=offset, length=length)
    with pytest.raises(ExternalDataError, match="'w'"):
        ort.InferenceSession(str(path))


def test_model_bytes_with_external_data_are_refused():
    m = onnx.ModelProto()
    w = m.graph.initializer.add()
    w.name, w.data_type, w.data_location = "w", TensorProto.FLOAT, TensorProto.EXTERNAL
    e = w.external_data.add()
    e.key, e.value = "location", "w.bin"
    m.graph.name = "g"
    m.ir_version = 8
    m.opset_import.add().version = 17
    with pytest.raises(ExternalDataError, match="load the model from its path"):
        ort.InferenceSession(m.SerializeToString())
