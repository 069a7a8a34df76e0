"""Concurrency at scale and soak runs, shared by the tests (small counts) and the long runs.

``concurrency``: threads run mixed models, each on its own sessions and all on shared ones, and
every result must be bitwise identical to the serial result of the same provider; then threads
create and drop sessions while others run. ``soak``: one session runs a model with the batch (and,
where symbolic, sequence) size changing every run; every result is compared with onnxruntime's at
that size, and resident memory is read after a warm-up pass and at the end.

    python -m tests.hardening.long_runs concurrency --providers numpy,numba,opencl --threads 8 --runs 1000
    python -m tests.hardening.long_runs soak --providers numpy,numba --runs 10000
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import threading
import time
import warnings
from typing import Any, Callable

import numpy as np
import onnx

import onnxplug as ort
from onnxplug.testing.model_suite import build, sample_inputs

#: the suite models small enough to run thousands of times on a busy machine
SMALL_MODELS = ("gru", "bilstm", "if_model", "loop_model")


def rss_bytes() -> int:
    """Resident set size of this process, from /proc/self/statm."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def feeds_for(name: str, size: int, seed: int = 0) -> dict[str, np.ndarray]:
    """The suite model's sample feeds with batch ``size``; loop_model's sequence length changes too."""
    feeds = sample_inputs(name, batch=size, seed=seed)
    if name == "loop_model":
        feeds = {k: np.ascontiguousarray(v[: 3 + size]) for k, v in feeds.items()}
    return feeds


def session(model: onnx.ModelProto | bytes, provider: str, intra_op: int = 0) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = intra_op
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # providers declining nodes
        return ort.InferenceSession(model if isinstance(model, bytes) else model.SerializeToString(),
                                    options, providers=[provider])


def _same(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))


def concurrency(provider: str, threads: int = 8, runs: int = 50, models: tuple[str, ...] = SMALL_MODELS,
                create_drop: int = 10) -> dict[str, Any]:
    """Per-thread sessions, then shared sessions, then create/drop stress; raises AssertionError on
    the first mismatch. Returns counts and CPU seconds."""
    cpu0 = time.process_time()
    blobs = {m: build(m).SerializeToString() for m in models}
    cases = [(m, s) for m in models for s in (1, 2, 3)]
    feeds = {c: feeds_for(*c) for c in cases}
    shared = {m: session(blobs[m], provider) for m in models}
    serial = {c: shared[c[0]].run(None, feeds[c]) for c in cases}
    errors: list[str] = []
    counts = {"own": 0, "shared": 0, "stress_runs": 0, "created": 0}
    lock = threading.Lock()

    def worker(index: int, own: bool) -> None:
        sessions = {m: session(blobs[m], provider) for m in models} if own else shared
        order = itertools.islice(itertools.cycle(cases[index % len(cases):] + cases[:index % len(cases)]), runs)
        done = 0
        for case in order:
            got = sessions[case[0]].run(None, feeds[case])
            if not _same(got, serial[case]):
                errors.append(f"{provider} {'own' if own else 'shared'} thread {index}: {case} differs")
                return
            done += 1
        with lock:
            counts["own" if own else "shared"] += done

    def creator(index: int, stop: threading.Event) -> None:
        for k in range(create_drop):
            case = cases[(index + k) % len(cases)]
            sess = session(blobs[case[0]], provider)
            if not _same(sess.run(None, feeds[case]), serial[case]):
                errors.append(f"{provider} created session {case} differs")
            del sess
            gc.collect()
            with lock:
                counts["created"] += 1

    def runner(index: int, stop: threading.Event) -> None:
        done = 0
        for case in itertools.cycle(cases):
            if stop.is_set():
                break
            if not _same(shared[case[0]].run(None, feeds[case]), serial[case]):
                errors.append(f"{provider} run during create/drop {case} differs")
                break
            done += 1
        with lock:
            counts["stress_runs"] += done

    for own in (True, False):
        pool = [threading.Thread(target=worker, args=(i, own)) for i in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
    stop = threading.Event()
    runners = [threading.Thread(target=runner, args=(i, stop)) for i in range(threads // 2)]
    creators = [threading.Thread(target=creator, args=(i, stop)) for i in range(threads - threads // 2)]
    for t in runners + creators:
        t.start()
    for t in creators:
        t.join()
    stop.set()
    for t in runners:
        t.join()
    if errors:
        raise AssertionError("; ".join(errors[:5]))
    return {**counts, "cpu_s": round(time.process_time() - cpu0, 1)}


def soak(provider: str, name: str, runs: int, sizes: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8),
         check: Callable[[list, list], None] | None = None, seed: int = 0, intra_op: int = 0) -> dict[str, Any]:
    """``runs`` runs of suite model ``name``, the size changing every run (a fixed pseudo-random
    order over ``sizes``), each compared with onnxruntime (``check(got, expected)``, by default
    ``tests.oracle.assert_close``). RSS is read after a warm-up of two passes over every size and
    at the end."""
    import onnxruntime

    from tests.oracle import assert_close

    check = check or assert_close
    model = build(name).SerializeToString()
    oracle = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    sess = session(model, provider, intra_op)
    feeds = {s: feeds_for(name, s) for s in sizes}
    expected = {s: oracle.run(None, feeds[s]) for s in sizes}
    del oracle
    order = np.random.default_rng(seed).choice(sizes, runs)
    warm = min(runs, 2 * len(sizes))
    order[:warm] = np.resize(np.array(sizes), warm)  # the warm-up sees every size
    cpu0 = time.process_time()
    rss_warm = rss_after = 0
    for i, size in enumerate(order):
        check(sess.run(None, feeds[int(size)]), expected[int(size)])
        if i + 1 == warm:
            gc.collect()
            rss_warm = rss_bytes()
    gc.collect()
    rss_after = rss_bytes()
    return {"provider": provider, "model": name, "runs": int(runs), "sizes": list(sizes), "intra_op": intra_op,
            "rss_warm_mb": round(rss_warm / 2**20, 1), "rss_end_mb": round(rss_after / 2**20, 1),
            "growth_pct": round(100 * (rss_after - rss_warm) / rss_warm, 2),
            "cpu_s": round(time.process_time() - cpu0, 1)}


def _available(provider: str) -> bool:
    return provider in ort.get_available_providers() or any(
        p.lower().startswith(provider) for p in ort.get_available_providers())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=["concurrency", "soak"])
    parser.add_argument("--providers", default="numpy,numba")
    parser.add_argument("--models", default=",".join(SMALL_MODELS))
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--sizes", default="1,2,3,4,5,6,7,8", help="soak: batch sizes to cycle through")
    parser.add_argument("--intra-op", type=int, default=0,
                        help="soak: the session's intra_op_num_threads (0: the provider's default)")
    args = parser.parse_args(argv)
    models = tuple(args.models.split(","))
    for provider in args.providers.split(","):
        if args.kind == "concurrency":
            result = concurrency(provider, args.threads, args.runs, models, create_drop=25)
            print(provider, f"{args.threads} threads x {args.runs} runs", result, flush=True)
        else:
            for name in models:
                sizes = tuple(int(s) for s in args.sizes.split(","))
                print(soak(provider, name, args.runs, sizes, intra_op=args.intra_op), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
