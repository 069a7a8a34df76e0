"""Models rewritten by onnxruntime's own offline tools, as users do before deploying.

Quantized models (family "quantized": ``quantize_dynamic`` of a BERT, ``quantize_static`` of a CNN in QDQ
and QOperator formats, per-tensor and per-channel, uint8 and int8 activations) and graphs rewritten into
``com.microsoft`` ops (family "ort-tools": the transformers optimizer on a BERT, with Attention or
MultiHeadAttention, and on a GPT-2, ``quantize_dynamic`` of an LSTM, quantized BERTs fused by an onnxruntime
session, and the 4-bit ``MatMulNBitsQuantizer`` on a LLaMA-style model). The float sources are built by
:mod:`._ort_sources`; ``notes`` list the com.microsoft and quantized op types each file contains.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

from onnxplug_conformance.zoo.recipes import _ort_sources as src
from onnxplug_conformance.zoo.spec import InputSpec, ZooModel

SEQ = ((2, 8), (3, 19))  # (batch, sequence) of the two shape sets


def _from_source(export: Callable[[Path, int], None], rewrite: Callable[[Path, Path], None],
                 seed: int = 0) -> Callable[[Path], None]:
    """A builder exporting the float source into a scratch folder, then rewriting it into ``path``."""
    def build(path: Path) -> None:
        with tempfile.TemporaryDirectory(prefix="onnxplug-zoo-") as scratch:
            source = Path(scratch) / "source.onnx"
            export(source, seed)
            rewrite(source, path)
    return build


def _quantize_dynamic(source: Path, path: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Shape inference gives no type to outputs of com.microsoft ops (a fused graph's); they are float.
    quantize_dynamic(str(source), str(path), weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


def _quantize_static(quant_format: str, activations: str = "QUInt8", per_channel: bool = False
                     ) -> Callable[[Path, Path], None]:
    def rewrite(source: Path, path: Path) -> None:
        from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

        quantize_static(str(source), str(path), src.image_reader("input", seed=0),
                        quant_format=getattr(QuantFormat, quant_format),
                        activation_type=getattr(QuantType, activations), weight_type=QuantType.QInt8,
                        per_channel=per_channel)
    return rewrite


def _optimize(model_type: str, multi_head_attention: bool = False) -> Callable[[Path, Path], None]:
    def rewrite(source: Path, path: Path) -> None:
        from onnxruntime.transformers.fusion_options import FusionOptions
        from onnxruntime.transformers.optimizer import optimize_model

        options = FusionOptions(model_type)
        options.use_multi_head_attention = multi_head_attention
        # opt_level 0: only the Python fusions, no onnxruntime session rewrites the graph first.
        model = optimize_model(str(source), model_type=model_type, num_heads=src.HEADS, hidden_size=src.HIDDEN,
                               opt_level=0, optimization_options=options)
        model.save_model_to_file(str(path))
    return rewrite


def _session_rewrite(source: Path, path: Path) -> None:
    """An onnxruntime session's extended-level graph rewrites, saved to ``path``: the only tool that emits
    DynamicQuantizeMatMul and MatMulIntegerToFloat (fusions of a dynamically quantized MatMul)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(path)
    onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])


def _chain(*steps: Callable[[Path, Path], None]) -> Callable[[Path, Path], None]:
    """Rewrites applied one after the other, intermediate files next to the source."""
    def rewrite(source: Path, path: Path) -> None:
        current = source
        for i, step in enumerate(steps):
            target = path if i == len(steps) - 1 else source.with_name(f"step{i}.onnx")
            step(current, target)
            current = target
    return rewrite


def _quantize_4bit(source: Path, path: Path) -> None:
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(onnx.load(str(source)), block_size=32, is_symmetric=True)
    quantizer.process()
    quantizer.model.save_model_to_file(str(path), use_external_data_format=False)


def _text_inputs(names: tuple[str, ...]) -> tuple[InputSpec, ...]:
    specs = {"input_ids": InputSpec("input_ids", "int64", SEQ, "integers", {"high": src.VOCAB}),
             "attention_mask": InputSpec("attention_mask", "int64", SEQ, "mask"),
             "token_type_ids": InputSpec("token_type_ids", "int64", SEQ, "integers", {"high": 2})}
    return tuple(specs[n] for n in names)


_BERT_INPUTS = _text_inputs(("input_ids", "attention_mask", "token_type_ids"))
_DECODER_INPUTS = _text_inputs(("input_ids", "attention_mask"))
_IMAGES = (InputSpec("input", "float32", ((1, 3, 32, 32), (4, 3, 48, 40)), "uniform"),)
_SEQUENCES = (InputSpec("x", "float32", ((2, 10, src.LSTM_FEATURES), (5, 23, src.LSTM_FEATURES)), "normal"),)
_TORCHSCRIPT = "exported by torch.onnx (TorchScript, opset 17)"
_NOISE = f"random weights + N(0, {src.PARAMETER_NOISE}) on every parameter"
_BERT = f"BertModel(BertConfig(hidden 64, 2 layers, 4 heads, eager attention), {_NOISE}) {_TORCHSCRIPT}"
_GPT2 = f"GPT2Model(GPT2Config(n_embd 64, 2 layers, 4 heads, no past, eager attention), {_NOISE}) {_TORCHSCRIPT}"
_LLAMA = (f"LlamaForCausalLM(LlamaConfig(hidden 64, 2 layers, 4 heads, 2 key/value heads, eager attention), "
          f"{_NOISE}) {_TORCHSCRIPT}")
_CNN = f"a residual CNN (Conv/BatchNorm/ReLU, MaxPool, Add, GlobalAveragePool, MatMul, Linear) {_TORCHSCRIPT}"


def _model(name: str, family: str, recipe: str, inputs: tuple[InputSpec, ...], build: Callable[[Path], None],
           notes: str, *, quantized: bool = False, tier: str = "full") -> ZooModel:
    return ZooModel(name=name, family=family, source_package="onnxruntime", recipe=recipe,
                    exporter="onnxruntime-tools", opset=src.OPSET, inputs=inputs, build=build, quantized=quantized,
                    tier=tier, notes=notes)


MODELS: list[ZooModel] = [
    _model("quantized-bert-dynamic", "quantized", f"quantize_dynamic(QInt8) of {_BERT}", _BERT_INPUTS,
           _from_source(src.export_bert, _quantize_dynamic),
           "ai.onnx DynamicQuantizeLinear x8, MatMulInteger x12 (the weight MatMuls; the two attention products per "
           "layer stay float MatMul), DequantizeLinear x3 (int8 embedding tables before their Gather); no "
           "com.microsoft op", quantized=True),
    _model("quantized-cnn-qdq", "quantized", f"quantize_static(QDQ, U8 activations, S8 weights) of {_CNN}", _IMAGES,
           _from_source(src.export_cnn, _quantize_static("QDQ")),
           "ai.onnx QuantizeLinear x11, DequantizeLinear x22 (uint8 activations, int8 weights, int32 biases) around "
           "float Conv x4 (ReLUs folded into the ranges), Add, MaxPool, GlobalAveragePool, MatMul, Gemm",
           quantized=True, tier="ci"),
    _model("quantized-cnn-qoperator", "quantized", f"quantize_static(QOperator, U8 activations, S8 weights) of {_CNN}",
           _IMAGES, _from_source(src.export_cnn, _quantize_static("QOperator")),
           "ai.onnx QLinearConv x4, QLinearMatMul, QuantizeLinear, DequantizeLinear, MaxPool on uint8; com.microsoft "
           "QGemm (alpha 1, transB 1, float-free: int32 bias, uint8 output), QLinearAdd, QLinearGlobalAveragePool "
           "(channels_last 0)", quantized=True),
    _model("quantized-cnn-qoperator-per-channel", "quantized",
           f"quantize_static(QOperator, U8 activations, S8 weights per output channel) of {_CNN}", _IMAGES,
           _from_source(src.export_cnn, _quantize_static("QOperator", per_channel=True)),
           "as quantized-cnn-qoperator (QLinearConv x4, QLinearMatMul; com.microsoft QGemm, QLinearAdd, "
           "QLinearGlobalAveragePool), with int8 weights, scales and zero points per output channel (1-D w_scale "
           "and w_zero_point of QLinearConv, QLinearMatMul's b and QGemm's B)", quantized=True),
    _model("quantized-cnn-qdq-s8", "quantized",
           f"quantize_static(QDQ, S8 activations, S8 weights per output channel) of {_CNN}", _IMAGES,
           _from_source(src.export_cnn, _quantize_static("QDQ", activations="QInt8", per_channel=True)),
           "ai.onnx QuantizeLinear x11 and DequantizeLinear x11 of int8 activations; DequantizeLinear x11 of "
           "per-channel int8 weights and int32 biases (axis 0; axis 1 for the MatMul weight)", quantized=True),
    _model("ort-optimized-bert", "ort-tools", f"onnxruntime.transformers.optimizer (bert, opt_level 0) of {_BERT}",
           _BERT_INPUTS, _from_source(src.export_bert, _optimize("bert")),
           "com.microsoft EmbedLayerNormalization (epsilon 1e-12, 8 inputs, mask_index output), Attention x2 "
           "(num_heads 4; input, packed QKV weights, bias, mask_index), SkipLayerNormalization x4 (epsilon 1e-12, "
           "with bias), BiasGelu x2; the rest is 6 MatMul and 3 Cast"),
    _model("ort-optimized-bert-mha", "ort-tools",
           f"onnxruntime.transformers.optimizer (bert, opt_level 0, use_multi_head_attention) of {_BERT}",
           _BERT_INPUTS, _from_source(src.export_bert, _optimize("bert", multi_head_attention=True)),
           "com.microsoft EmbedLayerNormalization, MultiHeadAttention x2 (num_heads 4; query, key, value, bias, "
           "key_padding_mask), SkipLayerNormalization x4, BiasGelu x2"),
    _model("ort-optimized-gpt2", "ort-tools", f"onnxruntime.transformers.optimizer (gpt2, opt_level 0) of {_GPT2}",
           _DECODER_INPUTS, _from_source(src.export_gpt2, _optimize("gpt2")),
           "com.microsoft SkipLayerNormalization x4 (epsilon 1e-5; two with bias, two without), FastGelu x2 (with "
           "bias); the attention stays unfused: transformers 5's causal-mask subgraph is not a pattern the gpt2 "
           "fusion matches"),
    _model("ort-quantized-lstm", "ort-tools",
           "quantize_dynamic(QInt8) of a bidirectional nn.LSTM(16 -> 32, batch_first) and a Linear, exported by "
           "torch.onnx (TorchScript, opset 17)", _SEQUENCES, _from_source(src.export_lstm, _quantize_dynamic),
           "com.microsoft DynamicQuantizeLSTM (direction bidirectional, hidden_size 32; X, W, R, B, initial_h, "
           "initial_c and per-tensor W/R scales and zero points; no sequence_lens, no peepholes); ai.onnx "
           "DynamicQuantizeLinear and MatMulInteger for the Linear", quantized=True, tier="ci"),
    _model("ort-quantized-bert-session", "ort-tools",
           f"quantize_dynamic(QInt8), then an onnxruntime session at ORT_ENABLE_EXTENDED saving its graph, of {_BERT}",
           _BERT_INPUTS, _from_source(src.export_bert, _chain(_quantize_dynamic, _session_rewrite)),
           "com.microsoft MatMulIntegerToFloat x6 (the Q/K/V projections sharing one DynamicQuantizeLinear; 7 "
           "inputs with bias), DynamicQuantizeMatMul x6 (with bias), FusedMatMul x2 (alpha 0.25), Gelu x2, "
           "SkipLayerNormalization x2 (no bias); ai.onnx DynamicQuantizeLinear x2, DequantizeLinear x3 (axis 1, "
           "gathered int8 embedding rows); "
           "the file imports every domain the session knows", quantized=True),
    _model("ort-quantized-bert-fused", "ort-tools",
           f"optimizer (bert, opt_level 0), quantize_dynamic(QInt8), then an onnxruntime session at "
           f"ORT_ENABLE_EXTENDED saving its graph, of {_BERT}", _BERT_INPUTS,
           _from_source(src.export_bert, _chain(_optimize("bert"), _quantize_dynamic, _session_rewrite)),
           "com.microsoft QEmbedLayerNormalization (epsilon 1e-12, 18 inputs: uint8 tables and gamma/beta with "
           "scales and zero points), QAttention x2 (num_heads 4, unidirectional 0; no past), DynamicQuantizeMatMul "
           "x6 (empty bias input), SkipLayerNormalization x4, BiasGelu x2; ai.onnx DynamicQuantizeLinear x2, "
           "DequantizeLinear x12 (axis 1, quantized LayerNormalization weights and biases)", quantized=True),
    _model("ort-llama-4bit", "ort-tools", f"MatMulNBitsQuantizer(block_size 32, symmetric) of {_LLAMA}",
           _DECODER_INPUTS, _from_source(src.export_llama, _quantize_4bit),
           "com.microsoft MatMulNBits x15 (bits 4, block_size 32, symmetric: A, B, scales, no zero points; K x N "
           "64x64, 64x32 (grouped key/value), 64x128, 128x64, and 64x1000 for lm_head)", quantized=True),
]
