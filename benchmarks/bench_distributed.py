"""Throughput (rows/s) of batch scoring on Ray Data and Dask against a plain single-process loop.

    python benchmarks/bench_distributed.py [--workloads mlp resnet18] [--repeat 3]

Workloads: ``mlp`` (the tabular classifier of :mod:`onnxplug.testing.tabular`, 100,000 rows in
batches of 1,000: per-batch overhead dominates) and ``resnet18`` (48 images in batches of 8: compute
dominates). Engines and their set-up are described in docs/benchmarks.md ("Batch inference on Ray
Data and Dask"). Medians of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # loopback only (tests/integrations/conftest.py)


def workload(name: str) -> tuple[bytes, str, np.ndarray, int]:
    """(model bytes, input name, rows, batch size)."""
    from onnxplug.testing import model_suite, tabular

    if name == "mlp":
        return tabular.build().SerializeToString(), "features", tabular.sample_rows(100_000), 1000
    if name == "resnet18":
        return model_suite.build("resnet18").SerializeToString(), "input", \
            model_suite.sample_inputs("resnet18", 48)["input"], 8
    raise SystemExit(f"unknown workload {name!r}")


def single_process(model: bytes, name: str, x: np.ndarray, batch: int, threads: int) -> float:
    import onnxplug as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    sess = ort.InferenceSession(model, so)
    sess.run(None, {name: x[:batch]})
    start = time.perf_counter()
    for i in range(0, len(x), batch):
        sess.run(None, {name: x[i:i + batch]})
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="+", default=["mlp", "resnet18"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    import dask.array as da
    import ray
    import ray.data
    from distributed import Client, LocalCluster

    from onnxplug.integrations import dask as onnx_dask
    from onnxplug.integrations import ray as onnx_ray

    sys.path.insert(0, os.path.dirname(__file__))
    from harness import machine_description

    print(machine_description(), flush=True)
    ray.init(num_cpus=2, include_dashboard=False, configure_logging=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None)
    client = Client(cluster)
    addresses = sorted(client.scheduler_info()["workers"])
    options = {"intra_op_num_threads": 1}
    rows_out = []
    for wl in args.workloads:
        model, name, x, batch = workload(wl)
        n = len(x)
        times: dict[str, list[float]] = {}

        def record(label: str, seconds: float) -> None:
            times.setdefault(label, []).append(seconds)
            print(f"  {wl} {label}: {seconds:.2f} s", flush=True)

        ds = ray.data.from_numpy([x[i:i + batch * 4] for i in range(0, n, batch * 4)]).materialize()
        tiny = ray.data.from_numpy(x[:1]).materialize()
        darrays = {}
        for workers in (1, 2):
            pinned = addresses[:workers]
            xd = client.persist(da.from_array(x, chunks=(batch, *x.shape[1:])), workers=pinned)
            darrays[workers] = (xd, pinned)
            client.compute(onnx_dask.score_array(xd, model, session_options=options), workers=pinned).result()
        for _ in range(args.repeat):
            record("single process, 1 thread", single_process(model, name, x, batch, 1))
            record("single process, 2 threads", single_process(model, name, x, batch, 2))
            for workers in (1, 2):
                xd, pinned = darrays[workers]
                start = time.perf_counter()
                client.compute(onnx_dask.score_array(xd, model, session_options=options), workers=pinned).result()
                record(f"dask, {workers} worker(s)", time.perf_counter() - start)
            for workers in (1, 2):
                start = time.perf_counter()
                onnx_ray.score(ds, model, inputs={name: "data"}, session_options=options, concurrency=workers,
                               batch_size=batch, report=False).materialize()
                record(f"ray, {workers} actor(s), pool start included", time.perf_counter() - start)
            start = time.perf_counter()
            onnx_ray.score(tiny, model, inputs={name: "data"}, session_options=options, concurrency=1,
                           batch_size=1, report=False).materialize()
            record("ray start (a 1-row job, 1 actor)", time.perf_counter() - start)
        base = statistics.median(times["single process, 1 thread"])
        for label, ts in times.items():
            med = statistics.median(ts)
            rows = 1 if label.startswith("ray start") else n
            rate = f"{rows / med:,.0f}" if rows / med >= 100 else f"{rows / med:.2f}"
            rows_out.append(f"| {wl} | {label} | {rows} | {med:.2f} | {rate} | "
                            f"{'' if rows == 1 else f'{base / med:.2f}'} |")
    print("\n| workload | engine | rows | median s | rows/s | vs 1-thread loop |\n|---|---|---|---|---|---|")
    print("\n".join(rows_out))
    client.close()
    cluster.close()
    ray.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
