from onnxplug.plan_compiler import as_bool
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._control_util import compile_body
from onnxplug.providers.numpy.registry import op


@op("If")
class If(NumpyKernel):
    """Run then_branch or else_branch (compiled once) with the outer-scope values they read."""

    wants_scope = True

    def __init__(self, node, context):
        super().__init__(node, context)
        self.then_branch = compile_body(self, "then_branch")
        self.else_branch = compile_body(self, "else_branch")

    def compute(self, cond, scope=None):
        branch = self.then_branch if as_bool(cond) else self.else_branch
        return tuple(branch([], scope or {}))
