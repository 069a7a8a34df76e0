"""Contract tests that kernels are stateless: one session run from several threads at once.

Kernels are created once per node and ``compute`` must not change them, so one session can
serve many threads (as onnxruntime's does). Each thread feeds its own inputs (scaled copies of
a node case's floats, or model-suite inputs drawn with another seed) and all threads walk the
sessions in the same order, so they call the same kernels at the same time. A kernel that keeps
a buffer or a result between calls then hands a thread another thread's values and fails here:
every concurrent result must equal what the same session computed for those inputs alone.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

import onnxplug as ort
from onnxplug.testing.model_suite import MODEL_NAMES, sample_inputs

from onnxplug_conformance.case_labels import case_op
from onnxplug_conformance.comparison import compare_value
from onnxplug_conformance.contract.fixtures import NOT_CLAIMED, ProviderFixtures
from onnxplug_conformance.contract.survey import ClaimSurvey, node_cases
from onnxplug_conformance.model_runner import suite_model
from onnxplug_conformance.node_case import DataSet
from onnxplug_conformance.node_runner import claimed_session, fresh_feeds, session_options
from onnxplug_conformance.provider_spec import ProviderUnderTest

THREADS = 3
ROUNDS = 2
#: How many node cases (one per op) run concurrently at most; enough to touch every kernel family.
MAX_CASES = 250


@dataclass
class Job:
    """One session with one input variant per thread; ``runs[t]`` is thread t's call."""

    label: str
    runs: list[Callable[[], list[Any]]]
    rtol: float
    atol: float


def _scaled(feeds: dict[str, Any], factor: float) -> dict[str, Any]:
    out = {}
    for name, value in feeds.items():
        if isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.dtype.itemsize >= 4:
            value = (value * factor).astype(value.dtype)
        out[name] = value
    return out


def _copied(feeds: dict[str, Any]) -> dict[str, Any]:
    """Copies of feeds (lists and dicts included), so no run can write into another's inputs."""
    return fresh_feeds(DataSet(feeds, {}))


def _snapshot(outputs: list[Any]) -> list[Any]:
    """Deep copies: a kernel may hand out the same buffer on every call (that is the bug sought)."""
    return [fresh_feeds(DataSet({"v": v}, {}))["v"] for v in outputs]


def _check(got: list[Any], want: list[Any], job: Job) -> None:
    if len(got) != len(want):
        raise AssertionError(f"{len(got)} outputs, alone it gave {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        compare_value(w, g, job.rtol, job.atol, where=f"output {i}")


def run_concurrently(jobs: list[Job]) -> list[str]:
    """Run every variant alone, then each thread its own variant of every job, all threads in
    the same order, ROUNDS times; return the disagreements."""
    expected: list[tuple[Job, list[list[Any]]]] = []
    for job in jobs:
        try:
            with np.errstate(all="ignore"):
                expected.append((job, [_snapshot(run()) for run in job.runs]))
        except Exception:  # noqa: BLE001 - failures alone are the node tests' business
            continue
    problems: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def worker(index: int) -> None:
        start.wait()
        for _ in range(ROUNDS):
            for job, wants in expected:
                try:
                    with np.errstate(all="ignore"):
                        got = job.runs[index]()
                    _check(got, wants[index], job)
                except Exception as e:  # noqa: BLE001 - collected and reported below
                    with lock:
                        problems.append(f"{job.label}, thread {index}: {type(e).__name__}: {str(e)[:300]}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return problems


class BaseStatelessKernelTests(ProviderFixtures):
    """Kernels stay stateless under concurrent calls of one session."""

    def test_node_cases_run_concurrently(self, claim_survey: ClaimSurvey,
                                         provider_under_test: ProviderUnderTest) -> None:
        cases = node_cases()
        by_op: dict[str, str] = {}
        for name in claim_survey.deterministic_cases:
            by_op.setdefault(case_op(cases[name]), name)
        chosen = sorted(by_op.values())[:MAX_CASES]
        if not chosen:
            pytest.skip(f"{NOT_CLAIMED}: the provider fully claims no deterministic node case")
        jobs = []
        for name in chosen:
            case = cases[name]
            try:
                session = claimed_session(case, provider_under_test)
            except Exception:  # noqa: BLE001 - NotClaimed or session errors: the node tests' business
                continue
            feeds = fresh_feeds(case.data_sets[0])
            variants = [_scaled(feeds, 1.0 + t / 8) for t in range(THREADS)]
            runs = [lambda f=f: session.run(None, _copied(f)) for f in variants]
            jobs.append(Job(name, runs, case.rtol, case.atol))
        problems = run_concurrently(jobs)
        assert not problems, f"{len(problems)} concurrent run(s) disagree:\n" + "\n".join(problems[:30])

    @pytest.mark.parametrize("model_name", MODEL_NAMES)
    def test_model_runs_concurrently(self, claim_survey: ClaimSurvey, provider_under_test: ProviderUnderTest,
                                     model_name: str) -> None:
        if not claim_survey.model_claims.get(model_name):
            pytest.skip(f"{NOT_CLAIMED}: the provider claims no node of {model_name}")
        session = ort.InferenceSession(suite_model(model_name), session_options(fallback_disabled=False),
                                       providers=[provider_under_test.spec])
        feeds = [sample_inputs(model_name, batch=1, seed=seed) for seed in range(THREADS)]
        runs = [lambda f=f: session.run(None, {k: v.copy() for k, v in f.items()}) for f in feeds]
        problems = run_concurrently([Job(model_name, runs, 1e-5, 1e-6)])
        assert not problems, f"{len(problems)} concurrent run(s) disagree:\n" + "\n".join(problems[:30])
