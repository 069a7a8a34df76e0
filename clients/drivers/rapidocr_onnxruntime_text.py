"""rapidocr-onnxruntime (PaddleOCR v4 detector, classifier and recogniser): text of a printed page."""

import numpy as np
from rapidocr_onnxruntime import RapidOCR

import common
from images import text_page


def main() -> None:
    page = np.asarray(text_page(["Hello onnxplug 2026", "Drop-in runtime test", "numbers 31415"]))[:, :, ::-1]
    engine = RapidOCR()
    result, _ = engine(np.ascontiguousarray(page))
    lines = [{"text": text, "box": box, "score": float(score)} for box, text, score in (result or [])]
    common.emit({"lines": lines}, {"box": 2.0, "score": 1e-2})


if __name__ == "__main__":
    main()
