"""Score a dataset of images with an ONNX model on Dask, one onnxplug session per worker process.

    onnxplug models resnet18 -o resnet18.onnx
    python examples/dask_batch_scoring.py resnet18.onnx --images 64 --workers 2          # a LocalCluster
    python examples/dask_batch_scoring.py /shared/resnet18.onnx --scheduler tcp://HOST:8786

The images are a dask array generated on the workers (deterministic), so only the scores cross
the network; a real job reads them with ``da.from_zarr``/``dd.read_parquet``. The model reaches
the workers as a path every node can read, or with ``--ship-bytes`` as bytes in every task.
docs/distributed.md explains the cluster setup.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import onnx


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2, help="local worker processes (one thread each)")
    parser.add_argument("--batch-size", type=int, default=8, help="rows per block")
    parser.add_argument("--scheduler", help="a running scheduler's address; default: a LocalCluster")
    parser.add_argument("--providers", nargs="+", default=None, help="e.g. numba numpy")
    parser.add_argument("--ship-bytes", action="store_true", help="send the model's bytes instead of its path")
    args = parser.parse_args()

    import dask.array as da
    from distributed import Client, LocalCluster, progress

    from onnxplug.integrations import dask as onnx_dask

    if args.scheduler:
        client = Client(args.scheduler)
    else:
        client = Client(LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                     host="127.0.0.1", dashboard_address=None))
    (inp,) = onnx.load(args.model, load_external_data=False).graph.input[:1]
    shape = tuple(d.dim_value for d in inp.type.tensor_type.shape.dim[1:])
    images = da.random.default_rng(0).standard_normal((args.images, *shape), dtype=np.float32,
                                                      chunks=(args.batch_size, *shape))
    model = open(args.model, "rb").read() if args.ship_bytes else args.model
    scores = onnx_dask.score_array(images, model, providers=args.providers)
    start = time.perf_counter()
    scores = client.persist(scores)
    progress(scores)  # Dask's own progress bar over the onnxplug-score tasks
    top1 = scores.argmax(axis=1).compute()
    elapsed = time.perf_counter() - start
    print(f"\n{args.images} images in {elapsed:.1f} s ({args.images / elapsed:.1f} images/s, model loads included)")
    print("first top-1 classes:", top1[:10].tolist())
    for address, sessions in onnx_dask.worker_sessions(client).items():
        for s in sessions:
            print(f"worker {address} ({s['worker']}): {s['rows']} rows on {', '.join(s['providers'])}, "
                  f"{s['threads']} thread(s)" + (f"; {'; '.join(s['warnings'])}" if s["warnings"] else ""))
    client.close()


if __name__ == "__main__":
    main()
