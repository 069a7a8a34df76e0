"""intra_op_num_threads sizes the numpy provider's BLAS pool (it is not silently ignored)."""

from __future__ import annotations

import threadpoolctl

import onnxplug as ort


def _blas_threads() -> set[int]:
    return {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}


def test_intra_op_num_threads_sets_blas_pool(add_relu_model):
    before = threadpoolctl.threadpool_info()
    try:
        for n in (1, 2):
            so = ort.SessionOptions()
            so.intra_op_num_threads = n
            ort.InferenceSession(add_relu_model, so, providers=["numpy"])
            assert _blas_threads() == {n}
    finally:
        for info in before:
            threadpoolctl.threadpool_limits(info["num_threads"], user_api=info["user_api"])
