from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._sequence_util import as_sequence
from onnxplug.providers.numpy.registry import op


@op("SequenceMap")
class SequenceMap(NumpyKernel):
    """Runs the body once per element of the first sequence; other inputs are zipped (sequences)
    or repeated (tensors). Each body output becomes a sequence."""

    wants_scope = True

    def __init__(self, node, context):
        super().__init__(node, context)
        self._body = context.compile_subgraph(node.attr("body"))
        self._n_out = len(node.attr("body").outputs)

    def compute(self, sequence, *extra, scope):
        seq = as_sequence(sequence, "SequenceMap input 0")
        for i, e in enumerate(extra):
            if isinstance(e, list) and len(e) != len(seq):
                raise ValueError(f"SequenceMap input {i + 1} has {len(e)} elements, input 0 has {len(seq)}")
        outs = [[] for _ in range(self._n_out)]
        for i, item in enumerate(seq):
            args = [item, *(e[i] if isinstance(e, list) else e for e in extra)]
            for acc, value in zip(outs, self._body(args, scope)):
                acc.append(value)
        return tuple(outs)
