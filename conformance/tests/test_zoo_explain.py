"""Every node of the zoo's CI tier that numba or opencl leaves has a specific reason (``--explain``).

Runs on the built zoo in ``$ONNXPLUG_ZOO_DIR`` (the zoo env builds it); skipped without one.
"""

from __future__ import annotations

import os

import onnxplug as ort
import pytest
from onnxplug_conformance.zoo import manifest, registry
from onnxplug_conformance.zoo.explain import (
    SPECIFIC_KINDS,
    Unclaimed,
    explain_model,
    main,
)


def test_a_reason_of_kind_other_or_with_none_is_vague():
    assert Unclaimed("", "n", "Add", "numpy", "dtype", "'x' is int8, not one of float32").specific
    assert not Unclaimed("", "n", "Add", "numpy", "other", "Add.supports declined it").specific
    assert not Unclaimed("", "n", "Add", "numpy", "dtype", "no loop for input types (None, float32)").specific
    assert not Unclaimed("", "n", "Add", "numpy", "", "").specific
    assert "other" not in SPECIFIC_KINDS


def _ci_models() -> list[str]:
    if not os.environ.get("ONNXPLUG_ZOO_DIR"):
        return []
    entries = manifest.load(manifest.zoo_dir())
    return [m.name for m in registry.select(tier="ci") if entries.get(m.name, {}).get("status") == manifest.BUILT]


@pytest.mark.parametrize("provider", ["numba", "opencl"])
@pytest.mark.parametrize("name", _ci_models() or [pytest.param("", marks=pytest.mark.skip("no built zoo"))])
def test_every_node_left_in_the_ci_tier_has_a_specific_reason(provider, name):
    if provider not in ort.get_available_providers():
        pytest.skip(f"provider {provider!r} is not installed or not available here")
    result = explain_model(str(manifest.model_file(manifest.zoo_dir(), name)), provider)
    assert not result.error
    assert result.nodes > 0
    assert result.vague == [], [f"{u.op_type} {u.node!r}: {u.kind}: {u.reason}" for u in result.vague]


def test_the_check_script_fails_on_a_model_that_does_not_load(tmp_path, monkeypatch, capsys):
    (tmp_path / "models").mkdir()
    name = registry.select(tier="ci")[0].name
    manifest.model_file(tmp_path, name).write_bytes(b"not a model")
    manifest.write_file(tmp_path / manifest.MANIFEST_NAME, {name: {"status": manifest.BUILT}})
    monkeypatch.setenv("ONNXPLUG_ZOO_DIR", str(tmp_path))
    assert main(["--only", name, "numpy"]) == 1
    assert "did not load" in capsys.readouterr().out
