"""``onnxplug bench``: latency and throughput of one model on a provider set, and against onnxruntime.

Warm-up runs are not counted. With a comparison, both runtimes run in the same process on the same
feeds, in alternating blocks separated by short pauses, so a change in machine load reaches both.
Results are plain numbers (milliseconds, samples per second); nothing here asserts a speed.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Mapping

import numpy as np

#: the pause between two timed blocks of a comparison
PAUSE_S = 0.3


def summary(times_s: list[float], batch: int) -> dict[str, float]:
    """Median, p90, min and mean latency in ms, and samples per second at the median."""
    t = np.asarray(times_s) * 1e3
    median = float(np.median(t))
    return {"runs": len(t), "median_ms": median, "p90_ms": float(np.percentile(t, 90)), "min_ms": float(t.min()),
            "mean_ms": float(t.mean()), "throughput_per_s": batch * 1e3 / median if median > 0 else float("inf")}


def _progress(total: int, label: str) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is an optional extra: a line per block instead
        return _PlainProgress(total, label)
    return tqdm(total=total, desc=label, unit="run", file=sys.stderr, leave=False)


class _PlainProgress:
    def __init__(self, total: int, label: str) -> None:
        self.total, self.label, self.done = total, label, 0

    def update(self, n: int) -> None:
        self.done += n
        print(f"{self.label}: {self.done}/{self.total} runs", file=sys.stderr, flush=True)

    def close(self) -> None:
        pass


def _timed(run: Callable[[], Any], count: int, bar: Any) -> list[float]:
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
        bar.update(1)
    return times


def benchmark(runners: Mapping[str, Callable[[], Any]], *, runs: int, warmup: int, batch: int,
              blocks: int = 5, pause_s: float = PAUSE_S) -> dict[str, dict[str, float]]:
    """Time each runner (``name -> run()``): ``warmup`` uncounted runs each, then ``runs`` counted
    runs each, in ``blocks`` alternating blocks with ``pause_s`` between blocks when there are
    several runners. Returns :func:`summary` per runner."""
    for run in runners.values():
        for _ in range(warmup):
            run()
    several = len(runners) > 1
    blocks = max(1, min(blocks if several else 1, runs))
    sizes = [runs // blocks + (1 if i < runs % blocks else 0) for i in range(blocks)]
    times: dict[str, list[float]] = {name: [] for name in runners}
    bar = _progress(runs * len(runners), "bench")
    try:
        for size in sizes:
            for name, run in runners.items():
                times[name] += _timed(run, size, bar)
                if several:
                    time.sleep(pause_s)
    finally:
        bar.close()
    return {name: summary(t, batch) for name, t in times.items()}


def report_lines(results: Mapping[str, Mapping[str, float]], batch: int) -> list[str]:
    """One line per runner, then the median ratio of each to the first."""
    w = max(len(n) for n in [*results, "runtime"])
    lines = [f"{'runtime':<{w}} {'runs':>5} {'median ms':>10} {'p90 ms':>9} {'min ms':>9} {'samples/s':>10}"]
    for name, r in results.items():
        lines.append(f"{name:<{w}} {int(r['runs']):>5} {r['median_ms']:>10.3f} {r['p90_ms']:>9.3f} "
                     f"{r['min_ms']:>9.3f} {r['throughput_per_s']:>10.1f}")
    names = list(results)
    for other in names[1:]:
        ratio = results[names[0]]["median_ms"] / results[other]["median_ms"]
        lines.append(f"median {names[0]} / {other}: {ratio:.2f} (above 1: {names[0]} is slower)")
    lines.append(f"batch: {batch}")
    return lines
