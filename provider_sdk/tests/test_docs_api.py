"""The API reference (docs/api, Sphinx autodoc) builds with warnings as errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api"


def test_api_reference_builds_without_warnings(tmp_path: Path) -> None:
    pytest.importorskip("sphinx", reason="pip install onnxplug-sdk[docs]")
    result = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-E", "-b", "html",
                             str(DOCS), str(tmp_path / "html")], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    page = (tmp_path / "html" / "providers.html").read_text()
    # The docstrings really made it in (autodoc imported the package).
    assert "Base for providers whose kernels each compute one node." in page
    assert "claims maximal connected chains" in page
