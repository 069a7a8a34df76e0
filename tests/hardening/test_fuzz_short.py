"""A short fixed-seed fuzz run: every case runs or raises an OnnxplugError, none hangs.

The long run is ``python -m tests.hardening.fuzz --cases N`` (figures in docs/reliability.md).
"""

from __future__ import annotations

import resource

import pytest

from tests.hardening import fuzz

CASES = 8000


@pytest.fixture
def memory_cap():
    """A soft address-space cap, so a case that allocates without bound fails fast instead of swapping."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = 6 * 2**30
    if hard != resource.RLIM_INFINITY and hard < cap:
        cap = hard
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    yield
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def test_cases_are_reproducible():
    assert fuzz.make_case(7, 123) == fuzz.make_case(7, 123)
    assert fuzz.make_case(7, 123) != fuzz.make_case(7, 124)


def test_harness_sees_an_escape_and_a_hang(monkeypatch):
    def boom(data, **kwargs):
        raise KeyError("k")
    monkeypatch.setattr(fuzz, "run_case", boom)
    assert fuzz.classify(b"")[0] == "escape"

    def slow(data, **kwargs):
        while True:
            pass
    monkeypatch.setattr(fuzz, "run_case", slow)
    assert fuzz.classify(b"", limit_s=0.2)[0] == "hang"


def test_a_loop_of_2_to_the_40_iterations_is_cancelled_not_a_hang():
    assert fuzz.classify(fuzz.make_case(1, 445), limit_s=2.0) == ("terminated", "Loop")


def test_short_fuzz_run_has_no_escape_and_no_hang(memory_cap):
    result = fuzz.fuzz(CASES, seed=20261202, limit_s=20.0)
    assert result["findings"] == {}, result
    assert sum(result["counts"].values()) == CASES
    assert result["counts"].get("ok", 0) > CASES // 20  # the generator reaches run(), not only the loader
