"""Core interface versions: what the SDK supports, and providers for another core refused, not crashing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from onnx import helper
from packaging.requirements import Requirement
from sdk_support import make_model

import onnxplug
from onnxplug.plugins import ProviderCatalog, get_catalog
from onnxplug_sdk import (
    CORE_API_VERSION,
    SUPPORTED_CORE_API,
    IncompatibleCoreError,
    Kernel,
    KernelRegistryProvider,
    check_core_api,
    errors,
)

SDK_ROOT = Path(__file__).resolve().parents[1]


class FutureProvider(KernelRegistryProvider):
    """A provider built for a core interface this core does not implement."""

    name = "sdk_t_future"
    api_version = CORE_API_VERSION + 1


FutureProvider.kernel("Relu", 6)(type("FutureRelu", (Kernel,), {}))


def test_the_installed_core_is_supported_and_the_dependency_range_admits_it() -> None:
    assert CORE_API_VERSION in SUPPORTED_CORE_API
    meta = tomllib.loads((SDK_ROOT / "pyproject.toml").read_text())
    (core,) = [Requirement(r) for r in meta["project"]["dependencies"] if Requirement(r).name == "onnxplug"]
    assert core.specifier.contains(version("onnxplug"))
    assert not core.specifier.contains("1.0.0")  # a new core major may change the interface: not admitted


def test_sdk_providers_inherit_the_core_interface_version() -> None:
    class Current(KernelRegistryProvider):
        name = "sdk_t_current"

    assert Current.api_version == CORE_API_VERSION


def test_a_provider_for_another_interface_is_rejected_with_the_reason() -> None:
    catalog = ProviderCatalog()
    catalog.register(FutureProvider, plugin="future-plugin")
    assert "sdk_t_future" not in catalog.providers
    (rejected,) = catalog.rejected
    assert (rejected.name, rejected.plugin) == ("sdk_t_future", "future-plugin")
    assert f"written for core interface version {CORE_API_VERSION + 1}" in rejected.reason
    assert f"this core implements version {CORE_API_VERSION}" in rejected.reason


def test_a_session_asking_for_a_rejected_provider_gets_a_typed_error() -> None:
    catalog = get_catalog()
    catalog.register(FutureProvider, plugin="sdk-tests")
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": [2]}, {"y": [2]})
    try:
        with pytest.raises(errors.UnknownProviderError, match="unknown provider 'sdk_t_future'"):
            onnxplug.InferenceSession(model.SerializeToString(), providers=["sdk_t_future"])
    finally:
        catalog.rejected[:] = [r for r in catalog.rejected if r.name != "sdk_t_future"]


def test_check_core_api_explains_an_unsupported_core() -> None:
    check_core_api(1, frozenset({1}))
    with pytest.raises(IncompatibleCoreError, match=r"supports core interface version\(s\) 1, but the installed "
                                                   r"onnxplug implements version 2"):
        check_core_api(2, frozenset({1}))
    assert issubclass(IncompatibleCoreError, ImportError)


def _fake_distribution(root: Path, name: str, module: str, body: str) -> None:
    """An installed distribution on ``root`` with an onnxplug.providers entry point (no pip needed)."""
    (root / f"{module}.py").write_text(textwrap.dedent(body))
    info = root / f"{name.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[onnxplug.providers]\n{module} = {module}\n")


def _onnxplug_providers(pythonpath: Path, prelude: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(pythonpath), os.environ.get("PYTHONPATH", "")])}
    code = f"{prelude}\nimport sys\nfrom onnxplug.cli import main\nsys.exit(main(['providers']))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_onnxplug_providers_lists_an_incompatible_provider_as_refused(tmp_path: Path) -> None:
    _fake_distribution(tmp_path, "onnxplug-future", "sdk_future_plugin", """
        from onnxplug_sdk import KernelRegistryProvider, hookimpl

        class Future(KernelRegistryProvider):
            name = "future"
            api_version = 99

        @hookimpl
        def onnxplug_register_providers(register):
            register(Future)
    """)
    result = _onnxplug_providers(tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("numpy ") for line in lines)
    assert not any(line.startswith("future ") for line in lines)
    refused = [line for line in lines if "'future'" in line]
    assert refused == [f"provider 'future' from plugin 'sdk_future_plugin' refused: written for core interface "
                       f"version 99, but this core implements version {CORE_API_VERSION}; install a provider "
                       f"release built for it"]


def test_a_plugin_on_this_sdk_fails_to_load_cleanly_under_an_unsupported_core(tmp_path: Path) -> None:
    _fake_distribution(tmp_path, "onnxplug-current", "sdk_current_plugin", """
        from onnxplug_sdk import KernelRegistryProvider, hookimpl

        class Current(KernelRegistryProvider):
            name = "current"

        @hookimpl
        def onnxplug_register_providers(register):
            register(Current)
    """)
    # Pretend the core moved on to interface 2 before anything imports the SDK.
    result = _onnxplug_providers(tmp_path, "import onnxplug.provider as p; p.CORE_API_VERSION = 2")
    assert result.returncode == 0, result.stderr
    assert "plugin 'sdk_current_plugin' (onnxplug-current 0.1.0) failed to load: IncompatibleCoreError: " \
           "onnxplug-sdk supports core interface version(s) 1, but the installed onnxplug implements version 2" \
           in result.stdout
    assert not any(line.startswith("current ") for line in result.stdout.splitlines())
