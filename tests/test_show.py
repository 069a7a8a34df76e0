"""`onnxplug show`: the partitioned graph as a standalone HTML page, every node drawn in its
provider's colour, copies marked; checked in the page source and, where Chromium is installed,
in the page a headless Chromium rendered."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

import onnx
import onnxplug as ort
import pytest
from onnxplug.cli import main
from onnxplug.plugins import get_catalog
from onnxplug.show import PALETTE
from onnxplug.testing.model_suite import build

from tests.mixing_provider import MixingProvider

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot is not installed")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """resnet18 on the test device provider (Relu and Add) and numpy: copies in both directions."""
    get_catalog().register(MixingProvider, "tests")
    tmp = tmp_path_factory.mktemp("show")
    model = tmp / "resnet18.onnx"
    onnx.save(build("resnet18"), model)
    out = tmp / "graph.html"
    try:
        assert main(["show", str(model), "--provider", "mixing", "-o", str(out)]) == 0
        options = ort.SessionOptions()
        options.log_severity_level = 3
        count = len(ort.InferenceSession(str(model), options, providers=["mixing"]).get_node_assignments())
    finally:
        get_catalog().providers.pop("mixing", None)
    return out, count


def _nodes(text):
    """(node id, provider, fill) of each drawn node in the page source."""
    found = []
    for match in re.finditer(r'<g id="(n\d+_\d+)" class="node provider&#45;(\w+)">.*?fill="([^"]+)"', text, re.DOTALL):
        found.append(match.groups())
    return found


def test_every_node_is_drawn_in_its_providers_colour(page):
    page, count = page
    text = page.read_text()
    nodes = _nodes(text)
    assert len(nodes) == count
    colours = json.loads(re.search(r'id="onnxplug-data">(.*?)</script>', text).group(1))["providers"]
    assert colours == {"mixing": PALETTE[0], "numpy": PALETTE[1]}
    assert {p for _, p, _ in nodes} == {"mixing", "numpy"}
    assert all(fill == colours[p] for _, p, fill in nodes)
    assert 'class="edge copy"' in text  # values crossing between the two providers
    assert "\\n" not in text  # labels break lines, not show escapes
    assert "http://" not in text.replace("http://www.w3.org", "")  # nothing fetched from the network


def test_tooltips_give_the_declines(page):
    text = html.unescape(page[0].read_text())
    assert "mixing declined: op: no kernel registered for ai.onnx::Conv at opset 17" in text


@pytest.mark.skipif(not (shutil.which("chromium") or shutil.which("chromium-browser")),
                    reason="Chromium is not installed (Debian: apt-get install chromium)")
def test_chromium_renders_every_node_coloured_by_provider(page, tmp_path):
    page, count = page
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000"]
    dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    rendered = json.loads(html.unescape(re.search(r'data-rendered="([^"]*)"', dom).group(1)))
    expected = _nodes(page.read_text())
    assert len(rendered) == len(expected) == count
    for node_id, provider, fill in expected:
        drawn_provider, drawn_fill, width = rendered[node_id]
        assert (drawn_provider, drawn_fill) == (provider, fill) and width > 0, node_id
    shot = tmp_path / "graph.png"
    subprocess.run([browser, *flags, f"--screenshot={shot}", "--window-size=1200,900", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert shot.stat().st_size > 1000
