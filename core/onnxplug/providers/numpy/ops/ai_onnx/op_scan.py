import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._control_util import compile_body, empty_like_output
from onnxplug.providers.numpy.registry import op


@op("Scan")
class Scan(NumpyKernel):
    """Run the body once per slice of the scan inputs, carrying states.

    Opset 9+: scan inputs are sliced along ``scan_input_axes`` (reversed per
    ``scan_input_directions``) and outputs stacked along ``scan_output_axes``. Opset 8: inputs have
    a leading batch axis and the scan axis 1, with optional per-batch ``sequence_lens``.
    """

    wants_scope = True

    def __init__(self, node, context):
        super().__init__(node, context)
        self.body = compile_body(self, "body")
        self.graph = self.attr("body")
        self.num_scan = int(self.attr("num_scan_inputs"))

    def compute(self, *inputs, scope=None):
        scope = scope or {}
        if self.node.opset < 9:
            return self._scan8(inputs[0], list(inputs[1:]), scope)
        n_states = len(inputs) - self.num_scan
        states, scan_in = list(inputs[:n_states]), list(inputs[n_states:])
        in_axes = [int(a) for a in (self.attr("scan_input_axes", None) or [0] * self.num_scan)]
        in_dirs = [int(d) for d in (self.attr("scan_input_directions", None) or [0] * self.num_scan)]
        scan_in = [np.moveaxis(x, a % x.ndim, 0) for x, a in zip(scan_in, in_axes)]
        scan_in = [x[::-1] if d else x for x, d in zip(scan_in, in_dirs)]
        states, outs = self._run(states, scan_in, scope)
        n_out = len(self.graph.outputs) - n_states
        out_axes = [int(a) for a in (self.attr("scan_output_axes", None) or [0] * n_out)]
        out_dirs = [int(d) for d in (self.attr("scan_output_directions", None) or [0] * n_out)]
        result = []
        for k, (o, a, d) in enumerate(zip(outs, out_axes, out_dirs)):
            y = np.stack(o) if o else empty_like_output(self.graph, n_states + k)
            y = y[::-1] if d else y
            result.append(np.ascontiguousarray(np.moveaxis(y, 0, a % y.ndim)))
        return tuple(states) + tuple(result)

    def _run(self, states, scan_in, scope, length=None):
        steps = scan_in[0].shape[0] if length is None else length
        n_states = len(states)
        outs: list[list] = [[] for _ in range(len(self.graph.outputs) - n_states)]
        for t in range(steps):
            res = self.body([*states, *(x[t] for x in scan_in)], scope)
            states = list(res[:n_states])
            for k, v in enumerate(res[n_states:]):
                outs[k].append(v)
        return states, outs

    def _scan8(self, seq_lens, inputs, scope):
        n_states = len(inputs) - self.num_scan
        states, scan_in = inputs[:n_states], inputs[n_states:]
        dirs = [int(d) for d in (self.attr("directions", None) or [0] * self.num_scan)]
        batch, seq = scan_in[0].shape[:2]
        final_states, outputs = [], []
        for b in range(batch):
            n = seq if seq_lens is None else int(np.asarray(seq_lens).reshape(-1)[b])
            xs = [x[b, :n][::-1] if d else x[b, :n] for x, d in zip(scan_in, dirs)]
            st, outs = self._run([s[b] for s in states], xs, scope, n)
            final_states.append(st)
            stacked = []
            for k, o in enumerate(outs):
                y = np.stack(o) if o else empty_like_output(self.graph, n_states + k)
                if n < seq:  # pad past the sequence length with zeros
                    y = np.concatenate([y, np.zeros((seq - n,) + y.shape[1:], dtype=y.dtype)])
                stacked.append(y)
            outputs.append(stacked)
        states_out = [np.stack([fs[i] for fs in final_states]) for i in range(n_states)]
        scans_out = [np.stack([o[k] for o in outputs]) for k in range(len(outputs[0]))] if outputs else []
        return tuple(states_out) + tuple(scans_out)
