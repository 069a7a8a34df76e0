"""Entry-point discovery: the built-in provider through the same group, the autoload switch, the allowlist."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

PLUGIN = '''
from onnxplug.hookspecs import hookimpl
from onnxplug.provider import ExecutionProvider, Availability

class FakeProvider(ExecutionProvider):
    name = "fake"
    version = "9.9"
    @classmethod
    def availability(cls):
        return Availability(False, "no fake device: plug one in")

class OldProvider(ExecutionProvider):
    name = "old"
    api_version = 0

@hookimpl
def onnxplug_register_providers(register):
    register(FakeProvider)
    register(OldProvider)
'''

BROKEN = "raise ImportError('missing libfoo.so')\n"


@pytest.fixture
def plugin_path(tmp_path):
    """A folder on sys.path with two installed-looking distributions declaring entry points."""
    (tmp_path / "fake_plugin.py").write_text(PLUGIN)
    (tmp_path / "broken_plugin.py").write_text(BROKEN)
    for dist, ep in (("fake_plugin", "fake = fake_plugin"), ("broken_plugin", "broken = broken_plugin")):
        info = tmp_path / f"{dist}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[onnxplug.providers]\n{ep}\n")
    return tmp_path


def _clean_env(plugin_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ONNXPLUG_DISABLE_PLUGIN_AUTOLOAD", "ONNXPLUG_PLUGINS")}
    return env | {"PYTHONPATH": str(plugin_path)}


def _probe(plugin_path, env_extra: dict[str, str]) -> str:
    code = textwrap.dedent("""
        import warnings, onnxplug
        from onnxplug.plugins import get_catalog
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            c = get_catalog()
        print("providers", sorted(n for n in c.providers if n in ("fake", "old", "numpy")))
        print("all", sorted(c.providers))
        print("rejected", [(r.name, r.reason) for r in c.rejected])
        print("plugins", sorted((p.name, p.loaded, p.error) for p in c.plugins))
        print("warnings", [str(x.message) for x in w])
        print("available", [n for n in onnxplug.get_available_providers() if n in ("fake", "numpy")])
    """)
    env = _clean_env(plugin_path) | env_extra
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout


def test_builtin_and_third_party_load_through_entry_points(plugin_path):
    out = _probe(plugin_path, {})
    assert "providers ['fake', 'numpy']" in out
    assert "written for core interface version 0" in out  # the incompatible provider is refused, with why
    assert "('broken', False, 'ImportError: missing libfoo.so')" in out  # reported, not crashing
    assert "available ['numpy']" in out  # fake is installed but unavailable


def test_disable_autoload_keeps_only_core_entry_points(plugin_path):
    out = _probe(plugin_path, {"ONNXPLUG_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert "all ['numpy']" in out
    assert "broken" not in out


def test_allowlist_selects_entry_points(plugin_path):
    out = _probe(plugin_path, {"ONNXPLUG_PLUGINS": "fake"})
    assert "all ['fake', 'numpy']" in out
    assert "broken" not in out


def test_cli_lists_unavailable_provider_with_reason(plugin_path):
    env = _clean_env(plugin_path) | {"ONNXPLUG_PLUGINS": "fake"}
    out = subprocess.run([sys.executable, "-m", "onnxplug.cli", "providers"], env=env,
                         capture_output=True, text=True, check=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("fake"))
    assert "9.9" in line and "no" in line and "no fake device: plug one in" in line
    assert "refused" in out and "'old'" in out
