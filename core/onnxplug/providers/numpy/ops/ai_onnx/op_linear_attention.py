import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


def _heads(x: np.ndarray, heads: int) -> np.ndarray:
    """[B, T, H*D] -> [B, H, T, D] in float32."""
    b, t, hd = x.shape
    if hd % heads:
        raise ValueError(f"last dimension {hd} is not divisible by {heads} heads")
    return x.reshape(b, t, heads, hd // heads).transpose(0, 2, 1, 3).astype(np.float32)


@op("LinearAttention")
class LinearAttention(NumpyKernel):
    """Recurrent linear attention (linear / gated / delta / gated_delta rules): a [d_k, d_v] state per
    batch and kv head, updated each time step for all batches and heads at once."""

    def compute(self, query, key, value, past_state=None, decay=None, beta=None):
        rule = self.attr("update_rule", "gated_delta")
        if rule not in ("linear", "gated", "delta", "gated_delta"):
            raise ValueError(f"LinearAttention: unsupported update_rule {rule!r}")
        hq, hkv = self.attr("q_num_heads"), self.attr("kv_num_heads")
        if not hq or not hkv or hq % hkv:
            raise ValueError(f"LinearAttention: q_num_heads ({hq}) must be a positive multiple of kv_num_heads ({hkv})")
        gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
        if gated != (decay is not None) or delta != (beta is not None):
            raise ValueError(f"LinearAttention: update_rule {rule!r} needs decay={gated} and beta={delta}")
        q, k, v = _heads(query, hq), _heads(key, hkv), _heads(value, hkv)
        b, t, d_k, d_v = query.shape[0], query.shape[1], q.shape[-1], v.shape[-1]
        if gated:
            g = decay.reshape(b, t, hkv, -1).transpose(0, 2, 1, 3).astype(np.float32)  # [B, H, T, 1 or d_k]
        if delta:
            bt = beta.reshape(b, t, beta.shape[-1], 1).transpose(0, 2, 1, 3).astype(np.float32)
        state = np.zeros((b, hkv, d_k, d_v), np.float32) if past_state is None else past_state.astype(np.float32)
        scale = self.attr("scale") or 1 / np.sqrt(d_k)
        out = np.empty((b, hq, t, d_v), np.float32)
        group = hq // hkv
        for i in range(t):  # the recurrence is sequential in time
            if gated:
                state = state * np.exp(g[:, :, i])[..., None]
            v_t = v[:, :, i]
            if delta:
                v_t = bt[:, :, i] * (v_t - np.einsum("bhdm,bhd->bhm", state, k[:, :, i]))
            state = state + k[:, :, i, :, None] * v_t[:, :, None, :]
            read = state if group == 1 else np.repeat(state, group, axis=1)
            out[:, :, i] = scale * np.einsum("bhd,bhdm->bhm", q[:, :, i], read)
        y = out.transpose(0, 2, 1, 3).reshape(b, t, hq * d_v).astype(query.dtype)
        return y, state.astype(query.dtype if past_state is None else past_state.dtype)
