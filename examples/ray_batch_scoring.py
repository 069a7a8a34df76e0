"""Score a dataset of images with an ONNX model on Ray Data, one onnxplug session per actor.

    onnxplug models resnet18 -o resnet18.onnx
    python examples/ray_batch_scoring.py resnet18.onnx --images 64 --workers 2      # a local Ray
    python examples/ray_batch_scoring.py /shared/resnet18.onnx --address auto      # a running cluster

The images are generated on the workers from their row ids (deterministic), so only ids and
scores cross the network; a real job reads them with ``ray.data.read_images``/``read_parquet``.
The model reaches the actors as a path every node can read, or with ``--ship-bytes`` as bytes in
the actors' constructor arguments. docs/distributed.md explains the cluster setup.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import onnx


def image_shape(model_path: str) -> tuple[int, ...]:
    """The model's single input's shape past the batch axis (static dims required)."""
    (inp,) = [i for i in onnx.load(model_path, load_external_data=False).graph.input]
    return tuple(d.dim_value for d in inp.type.tensor_type.shape.dim[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2, help="actors in the pool (one CPU each)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--address", help="a running cluster ('auto' on one of its nodes); default: a local one")
    parser.add_argument("--providers", nargs="+", default=None, help="e.g. numba numpy")
    parser.add_argument("--ship-bytes", action="store_true", help="send the model's bytes instead of its path")
    args = parser.parse_args()

    import ray
    import ray.data

    from onnxplug.integrations import ray as onnx_ray

    # a CPU beside the actors' for the read stage: a pool holding every CPU would starve it
    ray.init(address=args.address) if args.address else ray.init(num_cpus=args.workers + 1, include_dashboard=False)
    ray.data.DataContext.get_current().execution_options.preserve_order = True
    shape = image_shape(args.model)
    input_name = onnx.load(args.model, load_external_data=False).graph.input[0].name

    def images(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        ids = batch["id"]
        pixels = np.stack([np.random.default_rng(int(i)).standard_normal(shape, dtype=np.float32) for i in ids])
        return {"id": ids, input_name: pixels}

    blocks = max(1, min(args.images // args.batch_size, 4 * args.workers))  # work for every actor
    ds = ray.data.range(args.images, override_num_blocks=blocks).map_batches(images, batch_size=args.batch_size)
    model = open(args.model, "rb").read() if args.ship_bytes else args.model
    scored = onnx_ray.score(ds, model, providers=args.providers, concurrency=args.workers,
                            batch_size=args.batch_size)
    start = time.perf_counter()
    out = scored.materialize()
    elapsed = time.perf_counter() - start
    frame = out.to_pandas()
    output = [c for c in frame.columns if c not in ("id", onnx_ray.WORKER_COLUMN, onnx_ray.PROVIDERS_COLUMN)][0]
    top1 = np.stack(frame[output].to_numpy()).argmax(axis=1)
    print(f"{len(frame)} images in {elapsed:.1f} s ({len(frame) / elapsed:.1f} images/s, actor start included)")
    print("first top-1 classes:", top1[:10].tolist())
    for w in onnx_ray.report(frame):
        print(f"worker {w.worker}: {w.rows} rows on {', '.join(w.providers)}")


if __name__ == "__main__":
    main()
