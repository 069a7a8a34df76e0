"""Concurrency at scale and soak runs, shared by the tests (small counts) and the long runs.

``concurrency``: threads run mixed suite and zoo models (``zoo:<name>``, built in the zoo folder),
each on its own sessions and all on shared ones, every other run through IOBinding, and every
result must be bitwise identical to the serial result of the same provider; then threads create
and drop sessions while others run. ``soak``: one session runs a model with the batch (and,
where symbolic, sequence) size changing every run (a zoo text model: its sequence length); every
result is compared with onnxruntime's at that size, and resident memory is read after a warm-up
pass and at the end.

    python -m tests.hardening.long_runs concurrency --providers numpy,numba,opencl --threads 8 --runs 1000
    python -m tests.hardening.long_runs soak --providers numpy,numba --runs 10000
    python -m tests.hardening.long_runs soak --models zoo:gpt2 --sizes 3,4,...,26 --runs 3000
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
#: a zoo model's name in a mix of models
ZOO = "zoo:"
#: the zoo models of the default mix, cheap on every CPU provider, one per exporter: skl2onnx,
#: onnxmltools (TreeEnsemble, left to numpy by numba and opencl), a wheel's model (If, LSTM),
#: a QDQ-quantized CNN, onnxruntime's fused BERT (MultiHeadAttention), a dynamo ConvNext
ZOO_MODELS = tuple(ZOO + n for n in ("sklearn-mlp", "lightgbm-classifier", "wheel-silero-vad",
                                     "quantized-cnn-qdq", "ort-optimized-bert-mha", "convnext-dynamo"))
#: cheap models of the zoo's CI tier (what the zoo env builds)
CI_ZOO_MODELS = tuple(ZOO + n for n in ("sklearn-logreg", "quantized-cnn-qdq", "ort-quantized-lstm", "vit"))


def rss_bytes() -> int:
    """Resident set size of this process, from /proc/self/statm."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def feeds_for(name: str, size: int, seed: int = 0) -> dict[str, np.ndarray]:
    """The suite model's sample feeds with batch ``size``; loop_model's sequence length changes too.
    A zoo text model (``zoo:bert``) gets its shape set 0 feeds with sequence length ``size``."""
    if name.startswith(ZOO):
        return {k: np.ascontiguousarray(np.resize(v, (*v.shape[:1], size, *v.shape[2:])))
                for k, v in case_feeds(name, 0).items()}
    feeds = sample_inputs(name, batch=size, seed=seed)
    if name == "loop_model":
        feeds = {k: np.ascontiguousarray(v[: 3 + size]) for k, v in feeds.items()}
    return feeds


def zoo_folder() -> str:
    """The zoo folder (``$ONNXPLUG_ZOO_DIR``, else the conformance package's default)."""
    try:
        from onnxplug_conformance.zoo import manifest
    except ImportError:
        return os.environ.get("ONNXPLUG_ZOO_DIR", "(no zoo: onnxplug_conformance is not installed)")
    return str(manifest.zoo_dir())


def built_zoo_models(names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(built, not built)`` of the ``zoo:`` names, by the manifest of the zoo folder
    (``$ONNXPLUG_ZOO_DIR``); every name is not built when the conformance package is missing."""
    try:
        from onnxplug_conformance.zoo import manifest
    except ImportError:
        return (), names
    folder = manifest.zoo_dir()
    entries = manifest.load(folder)
    built = tuple(n for n in names if entries.get(n[len(ZOO):], {}).get("status") == manifest.BUILT
                  and manifest.model_file(folder, n[len(ZOO):]).is_file())
    return built, tuple(n for n in names if n not in built)


def model_blob(name: str) -> bytes:
    """The serialized model: a suite model built here, or a zoo model's file in the zoo folder."""
    if not name.startswith(ZOO):
        return build(name).SerializeToString()
    from onnxplug_conformance.zoo import manifest
    from onnxplug_conformance.zoo.build import build_command

    path = manifest.model_file(manifest.zoo_dir(), name[len(ZOO):])
    if not path.is_file():
        raise FileNotFoundError(f"{name}: {path} is not built ({build_command([name[len(ZOO):]])})")
    return path.read_bytes()


def model_cases(name: str) -> list[tuple[str, int]]:
    """A suite model at batch 1, 2 and 3; a zoo model at its two shape sets."""
    return [(name, s) for s in ((0, 1) if name.startswith(ZOO) else (1, 2, 3))]


def case_feeds(name: str, size: int) -> dict[str, np.ndarray]:
    """The feeds of a case: the zoo's seeded feeds of a shape set, or the suite's sample feeds."""
    if not name.startswith(ZOO):
        return feeds_for(name, size)
    from onnxplug_conformance.zoo.inputs import feeds
    from onnxplug_conformance.zoo.registry import get_model

    return feeds(get_model(name[len(ZOO):]), size)


def session(model: onnx.ModelProto | bytes, provider: str, intra_op: int = 0) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = intra_op
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # providers declining nodes
        return ort.InferenceSession(model if isinstance(model, bytes) else model.SerializeToString(),
                                    options, providers=[provider])


def _same(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))


def _bound_run(sess: Any, binding: Any, feeds: dict[str, np.ndarray]) -> list[Any]:
    """One run through IOBinding: host inputs bound again, outputs (bound to the host) copied out."""
    for name, value in feeds.items():
        binding.bind_cpu_input(name, value)
    sess.run_with_iobinding(binding)
    return binding.copy_outputs_to_cpu()


def _through_binding(thread: int, k: int, cases: int) -> bool:
    """Whether run ``k`` of a thread cycling through ``cases`` goes through IOBinding: every other
    run, swapping at each pass, so every case runs both ways in two passes."""
    passes, position = divmod(k, cases)
    return (thread + position + passes) % 2 == 1


def _binding(sess: Any) -> Any:
    binding = sess.io_binding()
    for output in sess.get_outputs():
        binding.bind_output(output.name)
    return binding


def concurrency(provider: str, threads: int = 8, runs: int = 50, models: tuple[str, ...] = SMALL_MODELS,
                create_drop: int = 10) -> dict[str, Any]:
    """Per-thread sessions, then shared sessions, then create/drop stress; raises AssertionError
    naming every mismatch or exception of a thread. Each thread runs every other case through
    IOBinding (its own binding per session). Returns counts (``iobinding``: IOBinding runs of the
    first two phases) and CPU seconds."""
    cpu0 = time.process_time()
    blobs = {m: model_blob(m) for m in models}
    cases = [c for m in models for c in model_cases(m)]
    feeds = {c: case_feeds(*c) for c in cases}
    shared = {m: session(blobs[m], provider) for m in models}
    serial = {c: shared[c[0]].run(None, feeds[c]) for c in cases}
    errors: list[str] = []
    counts = {"own": 0, "shared": 0, "iobinding": 0, "stress_runs": 0, "created": 0}
    lock = threading.Lock()

    def check(sessions: dict[str, Any], bindings: dict[str, Any], case: tuple[str, int], bound: bool,
              where: str) -> bool:
        sess = sessions[case[0]]
        try:
            if bound:
                if case[0] not in bindings:
                    bindings[case[0]] = _binding(sess)
                got = _bound_run(sess, bindings[case[0]], feeds[case])
            else:
                got = sess.run(None, feeds[case])
        except Exception as e:  # noqa: BLE001 - a thread's failure is reported by the caller
            errors.append(f"{provider} {where}: {case} raised {type(e).__name__}: {e}")
            return False
        if not _same(got, serial[case]):
            errors.append(f"{provider} {where}: {case} differs ({'IOBinding' if bound else 'run'})")
            return False
        return True

    def worker(index: int, own: bool) -> None:
        where = f"{'own' if own else 'shared'} thread {index}"
        try:
            sessions = {m: session(blobs[m], provider) for m in models} if own else shared
        except Exception as e:  # noqa: BLE001
            errors.append(f"{provider} {where}: session raised {type(e).__name__}: {e}")
            return
        bindings: dict[str, Any] = {}
        start = index % len(cases)
        order = itertools.islice(itertools.cycle(cases[start:] + cases[:start]), runs)
        done = bound_runs = 0
        for k, case in enumerate(order):
            bound = _through_binding(index, k, len(cases))
            if not check(sessions, bindings, case, bound, where):
                break
            done += 1
            bound_runs += bound
        with lock:
            counts["own" if own else "shared"] += done
            counts["iobinding"] += bound_runs

    def creator(index: int) -> None:
        for k in range(create_drop):
            case = cases[(index + k) % len(cases)]
            try:
                sess = session(blobs[case[0]], provider)
            except Exception as e:  # noqa: BLE001
                errors.append(f"{provider} creating a session of {case[0]} raised {type(e).__name__}: {e}")
                return
            if not check({case[0]: sess}, {}, case, False, "created session"):
                return
            del sess
            gc.collect()
            with lock:
                counts["created"] += 1

    def runner(index: int, stop: threading.Event) -> None:
        bindings: dict[str, Any] = {}
        done = 0
        for k, case in enumerate(itertools.cycle(cases)):
            if stop.is_set() or not check(shared, bindings, case, _through_binding(index, k, len(cases)),
                                           "run during create/drop"):
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
    creators = [threading.Thread(target=creator, args=(i,)) for i in range(threads - threads // 2)]
    for t in runners + creators:
        t.start()
    for t in creators:
        t.join()
    stop.set()
    for t in runners:
        t.join()
    if errors:
        raise AssertionError("; ".join(errors[:5]) + (f" (+{len(errors) - 5} more)" if len(errors) > 5 else ""))
    return {**counts, "cases": len(cases), "cpu_s": round(time.process_time() - cpu0, 1)}


def soak(provider: str, name: str, runs: int, sizes: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8),
         check: Callable[[list, list], None] | None = None, seed: int = 0, intra_op: int = 0) -> dict[str, Any]:
    """``runs`` runs of model ``name``, the size changing every run (a fixed pseudo-random
    order over ``sizes``), each compared with onnxruntime (``check(got, expected)``, by default
    ``tests.oracle.assert_close``). RSS is read after a warm-up of two passes over every size and
    at the end."""
    import onnxruntime

    from tests.oracle import assert_close

    check = check or assert_close
    model = model_blob(name)
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


def default_models() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The default mix: the small suite models and the zoo models of :data:`ZOO_MODELS` built in
    the zoo folder; and the zoo models left out (not built)."""
    built, missing = built_zoo_models(ZOO_MODELS)
    return SMALL_MODELS + built, missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=["concurrency", "soak"])
    parser.add_argument("--providers", default="numpy,numba")
    parser.add_argument("--models", default=None,
                        help="comma-separated suite models and zoo:<name> zoo models; concurrency's default: "
                             f"{','.join(SMALL_MODELS + ZOO_MODELS)} (the zoo models built in $ONNXPLUG_ZOO_DIR); "
                             f"soak's: {','.join(SMALL_MODELS)}")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--sizes", default="1,2,3,4,5,6,7,8",
                        help="soak: batch sizes (zoo text models: sequence lengths) to cycle through")
    parser.add_argument("--intra-op", type=int, default=0,
                        help="soak: the session's intra_op_num_threads (0: the provider's default)")
    args = parser.parse_args(argv)
    if args.models:
        models = tuple(m.strip() for m in args.models.split(",") if m.strip())
    elif args.kind == "concurrency":
        models, missing = default_models()
        if missing:
            print(f"zoo models not built in {zoo_folder()}, left out: {', '.join(missing)}", flush=True)
    else:
        models = SMALL_MODELS
    if args.kind == "concurrency":
        print("models:", ", ".join(models), flush=True)
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
