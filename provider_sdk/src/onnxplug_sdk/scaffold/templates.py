'''The files of a new provider package, as ``string.Template`` texts (``$$`` is a literal dollar).'''

from __future__ import annotations

PYPROJECT = '''\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "$distribution"
version = "0.1.0"
description = "The $name execution provider for onnxplug."
readme = "README.md"
requires-python = ">=3.10"
dependencies = [
    "onnxplug-sdk>=0.1,<0.2",
    "numpy>=1.24",
]

[project.optional-dependencies]
test = ["pytest>=8", "onnxplug-conformance", "onnxruntime"]

# How onnxplug finds the provider: the module named here implements onnxplug_register_providers.
[project.entry-points."onnxplug.providers"]
$name = "$package.plugin"

[tool.setuptools.packages.find]
where = ["src"]

[tool.pytest.ini_options]
testpaths = ["tests"]
'''

README = '''\
# $distribution

The `$name` execution provider for [onnxplug](https://pypi.org/project/onnxplug/), written on `onnxplug-sdk`.

    pip install -e .            # registers the provider through the onnxplug.providers entry point
    onnxplug providers          # lists "$name"
    onnxplug conformance $name  # runs the conformance suite on the ops it claims
    pytest                      # the package's own tests (conformance included)

Use it in a session, with the default `numpy` provider running whatever it does not claim:

    import onnxplug as ort
    sess = ort.InferenceSession("model.onnx", providers=["$name"])

Layout: `src/$package/provider.py` is the provider class, `src/$package/ops/op_*.py` hold one kernel
each (imported the first time a kernel is looked up), `src/$package/plugin.py` is the entry point.
Import only from `onnxplug_sdk` (plus numpy and your device library), never from `onnxplug.*`.
'''

INIT = '''\
"""The $name execution provider for onnxplug."""

from $package.provider import $class_name

__all__ = ["$class_name"]
'''

PLUGIN = '''\
"""Entry point of the $name provider (group ``onnxplug.providers``)."""

from __future__ import annotations

from typing import Callable

from onnxplug_sdk import ExecutionProvider, hookimpl


@hookimpl
def onnxplug_register_providers(register: Callable[[type[ExecutionProvider]], None]) -> None:
    """Register the $name provider with onnxplug."""
    from $package.provider import $class_name

    register($class_name)
'''

PROVIDER = '''\
"""The $name provider class: its name, version, availability and where its kernels live."""

from __future__ import annotations

from typing import ClassVar

from onnxplug_sdk import Availability, KernelRegistryProvider


class $class_name(KernelRegistryProvider):
    """Kernels on host numpy arrays; add a device by setting device, allocator and data_transfer."""

    name: ClassVar[str] = "$name"
    version: ClassVar[str] = "0.1.0"
    ops_package: ClassVar[str] = "$package.ops"

    @classmethod
    def availability(cls) -> Availability:
        """Say here why the provider cannot run (missing driver, no device), if it cannot."""
        return Availability(True)

    @classmethod
    def devices(cls) -> list[str]:
        """What ``onnxplug providers`` shows for this provider."""
        return ["cpu (host memory)"]
'''

OPS_INIT = '''\
"""Kernels of the $name provider, one op per ``op_*.py`` module."""
'''

OP_RELU = '''\
"""Relu: max(x, 0)."""

from __future__ import annotations

import numpy as np

from onnxplug_sdk import GraphView, Kernel, Node

from $package.provider import $class_name

_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


@$class_name.kernel("Relu", 6, 13, 14)
class Relu(Kernel):
    """Relu for float tensors (opset 14 also allows integers, which this kernel leaves to others)."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        """Claim only float inputs."""
        return view.dtype_of(node.inputs[0]) in _FLOATS

    def compute(self, x: np.ndarray) -> np.ndarray:
        """The result keeps the input's dtype and shape."""
        return np.maximum(x, x.dtype.type(0))
'''

TEST_PROVIDER = '''\
"""The $name provider runs its claims in a session; results are compared with onnx.reference."""

from __future__ import annotations

import numpy as np
import onnx
import onnxplug
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator


def _relu_model(dtype: int, opset: int) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", dtype, [2, 5])
    y = helper.make_tensor_value_info("y", dtype, [2, 5])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def test_listed_by_onnxplug() -> None:
    assert "$name" in onnxplug.get_all_providers()


@pytest.mark.parametrize("opset", [6, 13, 14])
@pytest.mark.parametrize("elem_type", [TensorProto.FLOAT, TensorProto.DOUBLE])
def test_relu_runs_on_the_provider(opset: int, elem_type: int) -> None:
    model = _relu_model(elem_type, opset)
    session = onnxplug.InferenceSession(model.SerializeToString(), providers=["$name"])
    assert [a.provider for a in session.get_node_assignments()] == ["$name"]
    x = np.random.default_rng(0).standard_normal((2, 5)).astype(helper.tensor_dtype_to_np_dtype(elem_type))
    (got,) = session.run(None, {"x": x})
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_integer_relu_is_left_to_the_default_provider() -> None:
    session = onnxplug.InferenceSession(_relu_model(TensorProto.INT32, 14).SerializeToString(),
                                        providers=["$name"])
    assert [a.provider for a in session.get_node_assignments()] == ["numpy"]
'''

TEST_CONFORMANCE = '''\
"""The onnxplug conformance suite on the ops this provider claims (``onnxplug conformance $name``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnxplug_conformance", reason="pip install onnxplug-conformance to run the suite")


def test_passes_conformance_for_its_claims(tmp_path: Path) -> None:
    scripts = os.path.dirname(sys.executable)
    onnxplug = shutil.which("onnxplug", path=scripts) or shutil.which("onnxplug")
    assert onnxplug is not None, "the onnxplug command is not installed"
    command = [onnxplug, "conformance", "$name", "--json", str(tmp_path / "conformance.json"), "--table", "summary"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
'''


FILES: dict[str, str] = {
    "pyproject.toml": PYPROJECT,
    "README.md": README,
    "src/$package/__init__.py": INIT,
    "src/$package/py.typed": "",
    "src/$package/plugin.py": PLUGIN,
    "src/$package/provider.py": PROVIDER,
    "src/$package/ops/__init__.py": OPS_INIT,
    "src/$package/ops/op_relu.py": OP_RELU,
    "tests/test_$name.py": TEST_PROVIDER,
    "tests/test_conformance.py": TEST_CONFORMANCE,
}
"""Relative path (a template too) -> file text."""
