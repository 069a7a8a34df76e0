"""Deviation lists: reading TOML and JSON, merging sources, refusing malformed lists, drafting."""

from __future__ import annotations

from pathlib import Path

import pytest

from onnxplug_conformance import deviations as dev
from onnxplug_conformance.deviations import DeviationFileError, load_deviations, skeleton_from_report


def test_toml_and_json_read_the_same(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text('[node]\ntest_x = "reason x"\n[model]\nresnet18 = "slow"\n')
    (tmp_path / "a.json").write_text('{"node": {"test_x": "reason x"}, "model": {"resnet18": "slow"}}')
    assert dev.read_file(tmp_path / "a.toml") == dev.read_file(tmp_path / "a.json")


def test_later_sources_override_earlier_ones(tmp_path: Path) -> None:
    first, second = tmp_path / "1.toml", tmp_path / "2.toml"
    first.write_text('[node]\ntest_x = "first"\ntest_y = "only here"\n')
    second.write_text('[node]\ntest_x = "second"\n')

    class Provider:
        conformance_deviations = {"contract": {"test_round_trip[int4]": "from the class"}}

    found = load_deviations("no_shipped_list", Provider, [first, second])
    assert found.lookup("node", "test_x").reason == "second"
    assert found.lookup("node", "test_y").source == str(first)
    assert found.lookup("contract", "test_round_trip[int4]").reason == "from the class"
    assert found.lookup("model", "test_x") is None
    assert found.count() == 3
    assert found.unknown_ids("node", ["test_x"]) == ["test_y"]


def test_an_entry_without_a_module_applies_only_where_the_module_is_missing(tmp_path: Path) -> None:
    path = tmp_path / "optional.toml"
    path.write_text('[node]\n'
                    'test_needs_json = {reason = "needs json", without = "json"}\n'
                    'test_needs_absent = {reason = "needs it", without = "onnxplug_no_such_module"}\n')
    found = load_deviations("x", None, [path])
    assert found.lookup("node", "test_needs_json") is None  # json is importable: expected to pass
    assert found.lookup("node", "test_needs_absent").reason == "needs it"
    assert found.count() == 1


def test_provider_attribute_may_be_a_path(tmp_path: Path) -> None:
    listing = tmp_path / "mine.json"
    listing.write_text('{"node": {"test_z": "zzz"}}')

    class Provider:
        conformance_deviations = str(listing)

    assert load_deviations("x", Provider).lookup("node", "test_z").reason == "zzz"


@pytest.mark.parametrize(("text", "message"), [
    ('[nodes]\ntest_x = "r"\n', "unknown section [nodes]"),
    ('[node]\ntest_x = ""\n', "needs a non-empty reason"),
    ('[node]\ntest_x = 3\n', "needs a non-empty reason"),
    ('node = "r"\n', "[node] must be a table"),
    ('[node\n', "bad.toml"),
    ('[node]\ntest_x = {reason = "r"}\n', "needs 'reason' and 'without'"),
    ('[node]\ntest_x = {without = "onnxplug_no_such_module"}\n', "needs a non-empty reason"),
])
def test_malformed_lists_are_refused_by_name(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(DeviationFileError) as info:
        load_deviations("x", None, [path])
    assert message in str(info.value) and "bad.toml" in str(info.value)


def test_unknown_file_type_and_missing_file(tmp_path: Path) -> None:
    (tmp_path / "list.yaml").write_text("node: {}")
    with pytest.raises(DeviationFileError, match="are .toml or .json"):
        dev.read_file(tmp_path / "list.yaml")
    with pytest.raises(DeviationFileError, match="cannot read"):
        dev.read_file(tmp_path / "missing.toml")


def test_shipped_lists_are_valid() -> None:
    for path in sorted(dev.SHIPPED_DIR.glob("*.*")):
        load_deviations(path.stem)  # raises on a malformed list


def test_skeleton_lists_failures_and_errors_only() -> None:
    report = {"provider": "p", "tests": {
        "node:test_a": {"id": "test_a", "layer": "node", "outcome": "fail", "reason": "AssertionError: x\nmore"},
        "node:test_b": {"id": "test_b", "layer": "node", "outcome": "pass", "reason": ""},
        "model:gru": {"id": "gru", "layer": "model", "outcome": "error", "reason": "KernelError: \"boom\""},
        "node:test_c": {"id": "test_c", "layer": "node", "outcome": "not-claimed", "reason": "not claimed"},
    }}
    text = skeleton_from_report(report)
    parsed = dev._toml_loads(text)
    assert parsed == {"node": {"test_a": "AssertionError: x"}, "model": {"gru": 'KernelError: "boom"'}}
