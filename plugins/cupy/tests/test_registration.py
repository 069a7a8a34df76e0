"""Registration through the entry point, and an import that never needs (or loads) CuPy."""

from __future__ import annotations

import importlib.metadata
import io
import subprocess
import sys
from contextlib import redirect_stdout

from onnxplug.cli import main as onnxplug_main
from onnxplug.plugins import ENTRY_POINT_GROUP, get_catalog

from onnxplug_cupy.provider import CupyProvider


def test_entry_point_is_declared_by_the_distribution() -> None:
    found = [ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == "cupy"]
    assert len(found) == 1
    assert found[0].value == "onnxplug_cupy.plugin"
    assert found[0].dist is not None and found[0].dist.name == "onnxplug-cupy"


def test_catalog_registers_the_provider_under_its_name_and_the_onnxruntime_alias() -> None:
    catalog = get_catalog()
    assert catalog.providers["cupy"] is CupyProvider
    assert catalog.resolve_name("CUDAExecutionProvider") == "cupy"
    record = next(p for p in catalog.plugins if p.name == "cupy")
    assert record.loaded and not record.error
    assert not [r for r in catalog.rejected if r.name == "cupy"]


def test_importing_the_plugin_does_not_import_cupy() -> None:
    code = ("import sys, onnxplug_cupy, onnxplug_cupy.plugin, onnxplug_cupy.provider\n"
            "onnxplug_cupy.provider.CupyProvider.registry.keys()\n"  # loads every ops module too
            "print('cupy' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_import_and_listing_work_without_cupy_installed() -> None:
    # sys.modules['cupy'] = None makes "import cupy" raise ImportError, as on a machine without it
    code = ("import sys; sys.modules['cupy'] = None\n"
            "from onnxplug.cli import main\n"
            "main(['providers'])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("cupy "))
    assert " no " in line
    assert "CuPy is not installed" in line and "pip install 'onnxplug-cupy[cuda12]'" in line
    assert "failed to load" not in out.stdout


def test_onnxplug_providers_lists_cupy_with_its_availability() -> None:
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        assert onnxplug_main(["providers"]) == 0
    line = next(ln for ln in buffer.getvalue().splitlines() if ln.startswith("cupy "))
    availability = CupyProvider.availability()
    if availability:
        assert " yes " in line and "cuda:0" in line
    else:
        assert " no " in line and availability.reason in line
