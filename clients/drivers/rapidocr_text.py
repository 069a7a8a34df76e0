"""rapidocr 3 (its default PP-OCRv6 small detector and recogniser, v2 classifier): a printed page."""

import numpy as np
from rapidocr import RapidOCR

import common
from images import text_page


def main() -> None:
    page = np.asarray(text_page(["Quick brown fox 42", "Plugins all the way", "onnxplug"]))[:, :, ::-1]
    engine = RapidOCR()
    out = engine(np.ascontiguousarray(page))
    txts = list(out.txts or ())
    boxes = [] if out.boxes is None else out.boxes.tolist()
    scores = list(out.scores or ())
    lines = [{"text": t, "box": b, "score": float(s)} for t, b, s in zip(txts, boxes, scores)]
    common.emit({"lines": lines}, {"box": 2.0, "score": 1e-2})


if __name__ == "__main__":
    main()
