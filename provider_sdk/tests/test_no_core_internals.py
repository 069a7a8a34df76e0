"""Dogfooding: provider packages in plugins/ import the SDK (``onnxplug_sdk``), never ``onnxplug.*``.

Every ``plugins/*/src/**/*.py`` is parsed with ``ast``; ``import onnxplug``, ``import onnxplug.x``,
``from onnxplug import ...``, ``from onnxplug.x import ...`` and ``importlib.import_module("onnxplug...")``
with a literal name are violations, wherever they appear (also under ``if TYPE_CHECKING:``).
Packages whose names merely start with ``onnxplug`` (``onnxplug_sdk``, ``onnxplug_numba``) are fine.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORE = "onnxplug"


def _is_core(module: str | None) -> bool:
    return module is not None and (module == CORE or module.startswith(CORE + "."))


def core_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of the core in one source file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if _is_core(alias.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _is_core(node.module):
            found.append((node.lineno, str(node.module)))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str) \
                    and _is_core(node.args[0].value):
                found.append((node.lineno, node.args[0].value))
    return sorted(found)


def provider_sources(plugins: Path) -> list[Path]:
    """Every Python file under ``plugins/*/src``."""
    return sorted(p for p in plugins.glob("*/src/**/*.py") if p.is_file())


def violations(plugins: Path) -> list[str]:
    """``file:line imports module`` for each core import in the provider sources under ``plugins``."""
    return [f"{path.relative_to(plugins.parent)}:{line} imports {module}"
            for path in provider_sources(plugins) for line, module in core_imports(path)]


def test_provider_packages_import_only_the_sdk() -> None:
    plugins = REPO / "plugins"
    sources = provider_sources(plugins)
    if not sources:
        pytest.skip("plugins/ holds no provider sources yet")
    bad = violations(plugins)
    assert not bad, ("provider packages must import onnxplug_sdk, not the core's internals:\n  "
                     + "\n  ".join(bad))


# --- self-test on synthetic packages -------------------------------------------------------------------

_OFFENDING = '''\
from __future__ import annotations
import importlib
from typing import TYPE_CHECKING
import numpy, onnxplug
import onnxplug.kernel as k
from onnxplug.provider import ExecutionProvider
from onnxplug import errors
if TYPE_CHECKING:
    from onnxplug.ir import Node
mod = importlib.import_module("onnxplug.plugins")
'''

_CLEAN = '''\
from __future__ import annotations
import importlib
import onnxplug_sdk
from onnxplug_sdk import Kernel, errors
from onnxplug_sdk.helpers import broadcast_shapes
from onnxplug_numba.ops import op_relu
from . import ops
from .onnxplug import thing
mod = importlib.import_module("onnxplug_sdk.helpers")
'''


def _tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / "plugins" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "plugins"


def test_self_test_finds_every_kind_of_core_import(tmp_path: Path) -> None:
    plugins = _tree(tmp_path, {"bad/src/onnxplug_bad/provider.py": _OFFENDING})
    assert violations(plugins) == [
        f"plugins/bad/src/onnxplug_bad/provider.py:{line} imports {module}" for line, module in [
            (4, "onnxplug"), (5, "onnxplug.kernel"), (6, "onnxplug.provider"), (7, "onnxplug"),
            (9, "onnxplug.ir"), (10, "onnxplug.plugins")]]


def test_self_test_accepts_the_sdk_and_own_packages(tmp_path: Path) -> None:
    plugins = _tree(tmp_path, {"good/src/onnxplug_good/provider.py": _CLEAN,
                               "good/src/onnxplug_good/ops/op_relu.py": "from onnxplug_sdk import Kernel\n"})
    assert len(provider_sources(plugins)) == 2
    assert violations(plugins) == []


def test_self_test_looks_only_at_src(tmp_path: Path) -> None:
    # Tests and scripts of a provider package may use the core (e.g. to build sessions).
    plugins = _tree(tmp_path, {"good/tests/test_x.py": _OFFENDING, "good/setup_helper.py": _OFFENDING,
                               "good/src/onnxplug_good/deep/deeper/k.py": "import onnxplug.executor\n"})
    assert violations(plugins) == ["plugins/good/src/onnxplug_good/deep/deeper/k.py:1 imports onnxplug.executor"]
