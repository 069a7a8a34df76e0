"""The graph optimizer: passes grouped by onnxruntime's optimization levels, run by a pass manager."""

from onnxplug.optimizer.manager import PassManager, optimize_model
from onnxplug.optimizer.pass_base import GraphPass, PassResult

__all__ = ["GraphPass", "PassManager", "PassResult", "optimize_model"]
