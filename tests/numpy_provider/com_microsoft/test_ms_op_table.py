"""The op table's com.microsoft section: the registered kernels as native, every other op of
onnxruntime's CPU provider in that domain as not supported, onnxruntime's default-domain extras."""

from __future__ import annotations

from onnxruntime.capi import onnxruntime_pybind11_state as ort_capi

from onnxplug.providers.numpy import op_table


def test_com_microsoft_rows():
    rows = op_table.op_statuses()[op_table.ORT_DOMAIN]
    assert rows["Attention"] == [op_table.OpStatus(1, op_table.NATIVE, "com_microsoft/op_attention.py")]
    assert rows["SimplifiedLayerNormalization (default domain)"][0].how == op_table.NATIVE
    cpu = {k.op_name for k in ort_capi.get_all_opkernel_def()
           if k.domain == "com.microsoft" and k.provider == "CPUExecutionProvider"}
    assert cpu <= set(rows)
    assert rows["BeamSearch"][0].how == op_table.MISSING
