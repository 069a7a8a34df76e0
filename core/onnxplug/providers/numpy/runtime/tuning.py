"""The numpy provider's tuning: one frozen ``NumpyTuning`` built from its provider options.

Every field is a provider option of the same name (``providers=[("numpy", {"winograd": "1"})]``),
given as onnxruntime gives provider options (strings; flags ``'1'``/``'0'``) or as Python values.
The provider builds one object per session; kernels read it from their context (``tuning_of``),
never from module globals, so two sessions of one process may be tuned differently. The product
thresholds (``PRODUCT_OPTIONS``) are the exception: like the product thread count
(``intra_op_num_threads``) and numpy's BLAS they are process-wide, set by a numpy provider created
with them and kept by one created without (``blas.PRODUCT_THREADS.configure``). Their defaults come
from the environment variables named below, read once at import.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Mapping

from onnxplug.errors import OptionValueError


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def _option(default: Any, doc: str) -> Any:
    return dataclasses.field(default=default, metadata={"doc": doc})


@dataclass(frozen=True)
class NumpyTuning:
    """Switches and thresholds of the numpy provider's kernels (see docs/numpy-provider-ops.md)."""

    winograd: bool = _option(False, "3x3 stride-1 convolutions by Winograd's F(4x4, 3x3); off by default: its "
                             "float32 results differ more from onnxruntime's than im2col's do")
    winograd_min_tiles: int = _option(32, "fewest 4x4 output tiles (over all images) a Winograd convolution "
                                          "takes")
    winograd_min_macs: int = _option(8_000_000, "fewest multiply-adds (counted as im2col does) a Winograd "
                                                "convolution takes")
    winograd_unit_tiles: int = _option(48, "tiles an image or a band of its rows needs to be a Winograd unit "
                                           "of its own on the product threads")
    padded_rows: bool = _option(True, "small stride-1 2-D convolutions over padded-width rows (off: the "
                                      "strided-window im2col)")
    row_products: bool = _option(True, "padded-rows convolutions of 16 or more channels as one accumulating "
                                       "product per kernel row (needs the threaded BLAS)")
    im2col_bias_row: bool = _option(True, "im2col and 1x1 convolutions add the bias as one more weight column "
                                          "of the product")
    depthwise_shifted_rows: bool = _option(True, "stride-1 2-D depthwise convolutions by shifted rows (off: "
                                                 "columns)")
    depthwise_channels_last_max_out: int = _option(64, "2-D depthwise outputs of at most this many positions "
                                                       "per channel use channels-last scratch")
    depthwise_block_bytes: int = _option(4 << 20, "bytes of scratch, columns and result of one depthwise unit "
                                                  "(an image and a block of channels)")
    depthwise_mac_weight: int = _option(4, "weight of a depthwise multiply-add against a matmul's when deciding "
                                           "whether its units go to the product threads")
    im2col_band_bytes: int = _option(1 << 20, "an image whose im2col columns take 4x this many bytes or more goes "
                                              "in bands of output rows of about this many")
    nhwc_unit_pixels: int = _option(4096, "output pixels per unit of a channels-last 1x1 convolution worth "
                                          "splitting over the product threads")
    nhwc_dense_unit_bytes: int = _option(2 << 20, "bytes of columns per unit of a channels-last dense "
                                                  "convolution (bands of output rows beyond it)")
    bottleneck_band_bytes: int = _option(2 << 20, "bytes of expanded rows in one unit of a fused inverted "
                                                  "bottleneck (a band of an image's output rows)")
    bottleneck_band_per_thread: bool = _option(True, "a single image worth sharing goes in one inverted-bottleneck "
                                                     "band per product thread")
    bottleneck_images_per_unit: int = _option(4, "most small images in one inverted-bottleneck unit")
    share_layer_norm_rows: bool = _option(True, "large SkipLayerNormalizations share their rows over the product "
                                                "threads")
    split_product_macs: int = _option(_env_int("ONNXPLUG_NUMPY_SPLIT_MACS", 32_000_000),
                                      "products and shared work of fewer multiply-adds stay on the calling "
                                      "thread; process-wide, default from ONNXPLUG_NUMPY_SPLIT_MACS")
    threaded_product_macs: int = _option(_env_int("ONNXPLUG_NUMPY_THREADED_MACS", 8_000_000),
                                         "single products of at least this many multiply-adds go to the "
                                         "threaded BLAS; process-wide, default from ONNXPLUG_NUMPY_THREADED_MACS")
    threaded_gemv_macs: int = _option(_env_int("ONNXPLUG_NUMPY_THREADED_GEMV_MACS", 500_000),
                                      "the same for matrix-vector products; process-wide, default from "
                                      "ONNXPLUG_NUMPY_THREADED_GEMV_MACS")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> NumpyTuning:
        """The tuning the provider options ask for; other keys are ignored (the provider refuses
        unknown ones). A value the option cannot take raises OptionValueError naming it."""
        values = {}
        for field in dataclasses.fields(cls):
            if field.name in options:
                values[field.name] = _parse(field.name, field.type, options[field.name])
        return cls(**values)

    def as_options(self) -> dict[str, str]:
        """Every option as onnxruntime writes provider options: strings, flags as '1'/'0'."""
        return {f.name: _text(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def describe(cls) -> list[tuple[str, str, str]]:
        """(option, default, what it does) for every option, for the docs."""
        defaults = cls().as_options()
        return [(f.name, defaults[f.name], f.metadata["doc"]) for f in dataclasses.fields(cls)]


def _text(value: Any) -> str:
    return ("1" if value else "0") if isinstance(value, bool) else str(value)


def _parse(name: str, kind: str, value: Any) -> bool | int:
    if kind == "bool":
        text = str(value).strip().lower() if not isinstance(value, bool) else ("1" if value else "0")
        if text in ("1", "true"):
            return True
        if text in ("0", "false"):
            return False
        raise OptionValueError(f"numpy provider option {name!r} is a flag ('1' or '0'), not {value!r}")
    try:
        number = int(str(value).strip()) if not isinstance(value, bool) else None
    except ValueError:
        number = None
    if number is None or number < 0:
        raise OptionValueError(f"numpy provider option {name!r} is a count (an integer >= 0), not {value!r}")
    return number


#: The options held process-wide by ``blas.PRODUCT_THREADS`` rather than per provider.
PRODUCT_OPTIONS = ("split_product_macs", "threaded_product_macs", "threaded_gemv_macs")

#: The tuning of kernels whose provider gives none (another provider reusing a numpy kernel).
DEFAULT_TUNING = NumpyTuning()


def tuning_of(context: Any) -> NumpyTuning:
    """The tuning of a kernel's context: its provider's, else the defaults."""
    tuning = getattr(getattr(context, "provider", None), "tuning", None)
    return tuning if isinstance(tuning, NumpyTuning) else DEFAULT_TUNING
