"""The graph optimizer: passes grouped by onnxruntime's optimization levels, run by a pass manager."""

from onnxplug.optimizer.manager import PassManager, PassReport, optimize_model, registered_passes
from onnxplug.optimizer.pass_base import GraphPass, GraphRewritePass, PassError, PassResult, RewriteContext

__all__ = ["GraphPass", "GraphRewritePass", "PassError", "PassManager", "PassReport", "PassResult",
           "RewriteContext", "optimize_model", "registered_passes"]
