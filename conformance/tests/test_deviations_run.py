"""Deviations in real runs: a listed failure is an xfail, a listed test that passes (xpass), one the
provider does not claim, or a listed id that names no test fails the run; a provider may ship its own list."""

from __future__ import annotations

from pathlib import Path

from conftest import run_suite

WRONG = "broken_providers:WrongAbsProvider"
SELECT = ("--layers", "node", "-k", "test_abs or test_neg")


def test_wrong_kernel_fails_and_right_one_passes(tmp_path: Path) -> None:
    run = run_suite(tmp_path, WRONG, *SELECT)
    assert run.returncode == 1, run.output[-3000:]
    assert run.outcome("node", "test_abs") == "fail"
    assert run.outcome("node", "test_neg") == "pass"
    assert run.report["per_op"]["Abs"]["fail"] >= 1 and run.report["per_op"]["Neg"]["pass"] >= 1
    assert not run.report["complete"]


def test_listed_failure_is_an_expected_failure(tmp_path: Path) -> None:
    listing = tmp_path / "wrong.toml"
    listing.write_text('[node]\ntest_abs = "Abs returns its input"\n')
    run = run_suite(tmp_path, WRONG, *SELECT, "--deviations", str(listing))
    assert run.returncode == 0, run.output[-3000:]
    assert run.outcome("node", "test_abs") == "xfail"
    assert "Abs returns its input" in run.report["tests"]["node:test_abs"]["reason"]
    assert run.report["deviations"]["sources"] == [str(listing)]


def test_listed_test_that_passes_fails_the_run(tmp_path: Path) -> None:
    listing = tmp_path / "stale.json"
    listing.write_text('{"node": {"test_neg": "was broken once"}}')
    run = run_suite(tmp_path, WRONG, *SELECT, "--deviations", str(listing))
    assert run.returncode == 1
    assert run.outcome("node", "test_neg") == "xpass"
    assert run.counts("node")["xpass"] == 1


def test_listed_id_naming_no_test_fails_the_run(tmp_path: Path) -> None:
    listing = tmp_path / "typo.toml"
    listing.write_text('[node]\ntest_abs = "wrong"\ntest_no_such_case = "typo"\n')
    run = run_suite(tmp_path, WRONG, *SELECT, "--deviations", str(listing))
    assert run.returncode == 1
    assert run.report["deviations"]["unknown_ids"] == ["node:test_no_such_case"]
    assert "test_no_such_case" in run.output


def test_listed_test_the_provider_does_not_claim_fails_the_run(tmp_path: Path) -> None:
    listing = tmp_path / "unclaimed.toml"
    listing.write_text('[node]\ntest_abs = "wrong"\ntest_relu = "was wrong before the kernel was dropped"\n')
    run = run_suite(tmp_path, WRONG, "--layers", "node", "-k", "test_abs or test_relu",
                    "--deviations", str(listing))
    assert run.returncode == 1, run.output[-3000:]
    assert run.outcome("node", "test_relu") == "not-claimed"
    assert run.report["deviations"]["unknown_ids"] == ["node:test_relu (not claimed)"]


def test_provider_ships_its_own_list(tmp_path: Path) -> None:
    run = run_suite(tmp_path, "broken_providers:WrongAbsWithOwnDeviations", *SELECT)
    assert run.returncode == 0, run.output[-3000:]
    assert run.outcome("node", "test_abs") == "xfail"
    assert run.report["deviations"]["sources"] == [
        "broken_providers.WrongAbsWithOwnDeviations.conformance_deviations"]
