"""Providers with one deliberate defect each, for the suite's self-tests: every contract test
class, and the node and model layers, must catch its defect."""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from onnxplug.device import CPU, DataTransfer
from onnxplug.kernel import Kernel, KernelRegistry
from onnxplug.provider import Availability, Capability, ExecutionProvider, GraphView

# --- a wrong kernel (node layer): Abs returns its input unchanged; Neg is right ----------------

WRONG_REGISTRY = KernelRegistry("wrong_abs")


@WRONG_REGISTRY.kernel("Abs", 6, 13)
class IdentityAbs(Kernel):
    def compute(self, x: np.ndarray) -> np.ndarray:
        return x.copy()  # wrong for negative inputs


@WRONG_REGISTRY.kernel("Neg", 6, 13)
class Neg(Kernel):
    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.negative(x)


class WrongAbsProvider(ExecutionProvider):
    """Claims Abs (wrong) and Neg (right) on the host."""

    name: ClassVar[str] = "wrong_abs"

    def __init__(self, options=None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.kernel_registry = WRONG_REGISTRY


class WrongAbsWithOwnDeviations(WrongAbsProvider):
    """The same, shipping its expected failure as a class attribute."""

    name: ClassVar[str] = "wrong_abs_listed"
    conformance_deviations: ClassVar[dict[str, Any]] = {
        "node": {"test_abs": "IdentityAbs returns its input unchanged (deliberate, for the self-tests)"}}


# --- a wrong kernel inside real models (model layer): Relu returns |x| -------------------------

WRONG_RELU_REGISTRY = KernelRegistry("wrong_relu")


@WRONG_RELU_REGISTRY.kernel("Relu", 6, 13, 14)
class AbsoluteRelu(Kernel):
    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.abs(x)  # wrong for negative inputs


class WrongReluProvider(ExecutionProvider):
    """Claims Relu, computed wrongly, on the host: every suite model with a Relu must fail."""

    name: ClassVar[str] = "wrong_relu"

    def __init__(self, options=None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.kernel_registry = WRONG_RELU_REGISTRY


# --- a stateful kernel (concurrency): Relu keeps its last input on the kernel -----------------

STATEFUL_REGISTRY = KernelRegistry("stateful")


@STATEFUL_REGISTRY.kernel("Relu", 6, 13, 14)
class StatefulRelu(Kernel):
    def compute(self, x: np.ndarray) -> np.ndarray:
        self.last = x  # state on the kernel: another thread's call replaces it
        time.sleep(0.002)
        return np.maximum(self.last, 0).astype(x.dtype)


class StatefulProvider(ExecutionProvider):
    name: ClassVar[str] = "stateful"

    def __init__(self, options=None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.kernel_registry = STATEFUL_REGISTRY


# --- a lossy data transfer: to_host widens to float64 -----------------------------------------

class WideningTransfer(DataTransfer):
    device = CPU

    def to_device(self, array: np.ndarray) -> np.ndarray:
        return np.array(array)

    def to_host(self, value: Any) -> np.ndarray:
        return np.asarray(value, dtype=np.float64)


class LossyTransferProvider(StatefulProvider):
    name: ClassVar[str] = "lossy_transfer"

    def __init__(self, options=None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.data_transfer = WideningTransfer()


# --- claims without kernels ---------------------------------------------------------------------

class GreedyProvider(WrongAbsProvider):
    """Claims every node offered, though it has kernels for Abs and Neg only."""

    name: ClassVar[str] = "greedy"

    def get_capability(self, view: GraphView) -> list[Capability]:
        return [Capability((node,)) for node in view.nodes]


# --- a registry with a misplaced version -----------------------------------------------------

MISVERSIONED = KernelRegistry("misversioned")
MISVERSIONED.register("Relu", 6, StatefulRelu)
MISVERSIONED.register("Relu", 12, StatefulRelu)  # Relu's schema changed at 13 and 14, not 12


class MisversionedProvider(StatefulProvider):
    name: ClassVar[str] = "misversioned"

    def __init__(self, options=None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.kernel_registry = MISVERSIONED


# --- unavailable, with and without a reason ---------------------------------------------------

class UnavailableSilently(WrongAbsProvider):
    name: ClassVar[str] = "unavailable_silently"

    @classmethod
    def availability(cls) -> Availability:
        return Availability(False)


class UnavailableWithReason(WrongAbsProvider):
    name: ClassVar[str] = "unavailable_with_reason"

    @classmethod
    def availability(cls) -> Availability:
        return Availability(False, "the test device is unplugged")
